package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/capability"
)

// HeaderCapability carries an agent's capability token. Agents that cannot
// add headers present a virtual key the token is bound to instead (Bind).
const HeaderCapability = "X-Apiary-Capability"

// ToolModel is the tool a model request exercises in a token's tools
// caveat.
const ToolModel = "model"

// Errors of the capability check.
var (
	// ErrCapability: the request's capability does not allow it (or is
	// missing where one is required); the client gets 403.
	ErrCapability = errors.New("gateway: capability does not allow the request")
	// ErrAborted is the cause of a request aborted because its holder's
	// capability was revoked or its task cancelled.
	ErrAborted = errors.New("gateway: request aborted: its capability was revoked")
)

// Authority verifies the capability an agent presents on every request —
// the token in X-Apiary-Capability, or the one bound to its virtual key —
// with the root key and the revocations: tool "model", the upstream's host
// (the network caveat), expiry, and budget (the spend of the request's key
// so far, in flight included). It also tracks the requests in flight by
// token lineage, so that revoking a task (Abort) cancels its calls, upstream
// too. Set Config.Authority to use it. Safe for concurrent use.
type Authority struct {
	verifier *capability.Verifier
	revoker  capability.Revoker
	now      func() time.Time
	// Required refuses requests that present no capability at all.
	Required bool

	mu      sync.Mutex
	bound   map[string]*capability.Token // virtual key id → token
	flights map[*flight]struct{}
}

// flight is one request in flight.
type flight struct {
	lineage []string
	keyID   string
	cancel  context.CancelCauseFunc
}

// NewAuthority returns an Authority for tokens signed with key, checked
// against revoker (nil: none); now is the clock (nil: time.Now).
func NewAuthority(key []byte, revoker capability.Revoker, now func() time.Time) (*Authority, error) {
	v, err := capability.NewVerifier(key, 0)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Authority{verifier: v, revoker: revoker, now: now, bound: map[string]*capability.Token{}, flights: map[*flight]struct{}{}}, nil
}

// Bind makes token the capability of requests presenting virtual key
// keyID (an agent CLI that can only set an API key).
func (a *Authority) Bind(keyID, token string) error {
	tok, err := capability.Decode(token)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.bound[keyID] = tok
	a.mu.Unlock()
	return nil
}

// Abort cancels, with cause ErrAborted, every request in flight whose
// token's lineage starts with lineage (root first: the run, then the task
// path), or whose virtual key is keyID when keyID is set; it returns how
// many it cancelled.
func (a *Authority) Abort(lineage []string, keyID string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for f := range a.flights {
		if keyID != "" && f.keyID == keyID || len(lineage) > 0 && hasPrefix(f.lineage, lineage) {
			f.cancel(ErrAborted)
			n++
		}
	}
	return n
}

// InFlight returns the number of requests being tracked.
func (a *Authority) InFlight() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.flights)
}

func hasPrefix(l, p []string) bool {
	if len(p) > len(l) {
		return false
	}
	for i := range p {
		if l[i] != p[i] {
			return false
		}
	}
	return true
}

// authorize checks r's capability (when the gateway has an Authority) and
// returns the context to proxy it under — cancelled by Abort — and the
// function that ends its tracking. The header never goes upstream.
func (g *Gateway) authorize(r *http.Request, id *identity, up *upstream) (context.Context, func(), error) {
	a := g.cfg.Authority
	text := r.Header.Get(HeaderCapability)
	r.Header.Del(HeaderCapability)
	if a == nil {
		if id.flight == nil {
			return r.Context(), func() {}, nil
		}
		// Armed, so that revoking the key aborts it (RevokeKey).
		ctx, cancel := context.WithCancelCause(r.Context())
		g.flights.arm(id.flight, cancel)
		return ctx, func() {
			g.flights.arm(id.flight, nil)
			cancel(nil)
		}, nil
	}
	var tok *capability.Token
	if text != "" {
		var err error
		if tok, err = capability.Decode(strings.TrimSpace(text)); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrCapability, err)
		}
	} else if id.vkey != nil {
		a.mu.Lock()
		tok = a.bound[id.keyID]
		a.mu.Unlock()
	}
	if tok == nil {
		if a.Required {
			return nil, nil, fmt.Errorf("%w: no capability presented (header %s or a bound virtual key)", ErrCapability, HeaderCapability)
		}
		return r.Context(), func() {}, nil
	}
	req := capability.Request{Tool: ToolModel, Host: up.url.Host, Now: a.now(), Spend: g.spendOf(id)}
	if err := a.verifier.Verify(tok, req, a.revoker); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrCapability, err)
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	f := &flight{lineage: tok.Lineage(), keyID: id.keyID, cancel: cancel}
	a.mu.Lock()
	a.flights[f] = struct{}{}
	a.mu.Unlock()
	return ctx, func() {
		a.mu.Lock()
		delete(a.flights, f)
		a.mu.Unlock()
		cancel(nil)
	}, nil
}

// spendOf is what a request's key (else its agent) has spent, in flight
// included — this request's reservation too.
func (g *Gateway) spendOf(id *identity) capability.Spend {
	agent, key := g.budgets.accountsFor(id)
	acc := key
	if acc == nil {
		acc = agent
	}
	var s capability.Spend
	if acc == nil {
		return s
	}
	if acc.usd != nil {
		st := acc.usd.Stats()
		s.MicroUSD = st.Spent + st.Reserved
	}
	if acc.tokens != nil {
		st := acc.tokens.Stats()
		s.Tokens = st.Spent + st.Reserved
	}
	return s
}

// RevokeKey revokes virtual key id for good: requests presenting it are
// refused from now on, and those in flight are aborted, upstream too, with
// ErrAborted as the cause (a stream the client is reading ends with the
// provider's in-stream error). It returns how many were aborted. This is how
// a cancelled task stops spending at once.
func (g *Gateway) RevokeKey(ctx context.Context, id string) (int, error) {
	if g.cfg.DB != nil {
		if err := RevokeKey(ctx, g.cfg.DB, id); err != nil {
			return 0, err
		}
	}
	g.keys.revoked(id)
	n := g.flights.abort(id)
	if a := g.cfg.Authority; a != nil {
		n += a.Abort(nil, id)
	}
	return n, nil
}
