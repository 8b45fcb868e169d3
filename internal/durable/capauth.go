package durable

import (
	"errors"
	"path"
	"slices"
	"time"

	"github.com/apiary-dev/apiary/internal/capability"
)

// Capability is an Authority backed by a capability token: before every
// tool call (Allow(tool, "")) and for every path a tool writes (Allow(tool,
// p)) the token is verified — its HMAC chain with the root key, its
// lineage against the revocations, and each caveat (tools, path prefixes,
// expiry) against the call — so an agent can do through the durable server
// exactly what its token allows and nothing once it is revoked. Tools in
// EscrowTools are refused with context.reason escrow_elevation_required
// unless Escrow (asked on every such call) allows them.
//
// Paths are checked in the display form the tools report (workspace-
// relative, "/"-separated), which for a worktree is the repository-relative
// form write scopes use. A Capability is safe for concurrent use.
type Capability struct {
	verifier *capability.Verifier
	token    *capability.Token
	revoker  capability.Revoker
	now      func() time.Time
	// EscrowTools need a human's approval; Escrow is asked about each call
	// to one and returns nil to allow it (nil Escrow refuses them all).
	EscrowTools []string
	Escrow      func(tool string) error
}

var _ Authority = (*Capability)(nil)

// NewCapability parses token (its text form) for verification with key
// against revoker (nil: no revocations); now is the clock (nil:
// time.Now). A malformed token or short key is an error now, not at the
// first call.
func NewCapability(key []byte, token string, revoker capability.Revoker, now func() time.Time) (*Capability, error) {
	v, err := capability.NewVerifier(key, 0)
	if err != nil {
		return nil, err
	}
	tok, err := capability.Decode(token)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Capability{verifier: v, token: tok, revoker: revoker, now: now}, nil
}

// Allow implements Authority.
func (c *Capability) Allow(tool, p string) error {
	req := capability.Request{Tool: tool, Now: c.now()}
	if p != "" {
		req.Paths = []string{path.Clean(p)}
	}
	if err := c.verifier.Verify(c.token, req, c.revoker); err != nil {
		ctx := map[string]any{"tool": tool, "detail": err.Error()}
		if p != "" {
			ctx["path"] = p
		}
		why := "capability_denied"
		switch {
		case errors.Is(err, capability.ErrRevoked):
			why = "capability_revoked"
		case errors.Is(err, capability.ErrExpired):
			why = "capability_expired"
		case errors.Is(err, capability.ErrBadSignature), errors.Is(err, capability.ErrMalformed), errors.Is(err, capability.ErrKey):
			why = "capability_invalid"
		}
		return policyErr(ReasonPermission, why, ctx)
	}
	if p == "" && slices.Contains(c.EscrowTools, tool) {
		var err error = policyErr(ReasonPermission, "escrow_elevation_required", map[string]any{"tool": tool})
		if c.Escrow != nil {
			err = c.Escrow(tool)
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return e
			}
			return policyErr(ReasonPermission, "escrow_elevation_required", map[string]any{"tool": tool, "detail": err.Error()})
		}
	}
	return nil
}
