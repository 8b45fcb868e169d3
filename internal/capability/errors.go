package capability

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error returned by this package matches exactly one
// of them with errors.Is (a rejected expiry caveat matches both ErrCaveat and
// ErrExpired).
var (
	// ErrBadSignature: the chain recomputed with the root key does not end in
	// the token's signature (wrong key, or a forged or altered token).
	ErrBadSignature = errors.New("capability: bad signature")
	// ErrExpired: an expiry caveat rejected the request time.
	ErrExpired = errors.New("capability: expired")
	// ErrCaveat: a caveat rejected the request; the error is a *CaveatError.
	ErrCaveat = errors.New("capability: caveat not satisfied")
	// ErrRevoked: a node of the token's lineage was revoked after the token
	// was issued; the error is a *RevokedError.
	ErrRevoked = errors.New("capability: revoked")
	// ErrMalformed: a token's text or binary form is invalid.
	ErrMalformed = errors.New("capability: malformed token")
	// ErrKey: a root key shorter than MinKeyLen.
	ErrKey = errors.New("capability: key too short")
	// ErrInvalid: an invalid argument to Mint (empty root or lineage segment).
	ErrInvalid = errors.New("capability: invalid argument")
	// ErrWiden: Derive was asked for more than the parent token allows.
	ErrWiden = errors.New("capability: child would exceed parent")
	// ErrDepth: Derive was called on a token whose depth caveat is exhausted.
	ErrDepth = errors.New("capability: spawn depth exhausted")
)

// CaveatError reports the caveat that rejected a request and why.
type CaveatError struct {
	Index  int    // position of the caveat in the chain, from 0
	Caveat Caveat // the rejecting caveat
	Reason string // what in the request failed it
}

func (e *CaveatError) Error() string {
	prefix := "capability: caveat"
	if e.Caveat.kind == KindExpiry {
		prefix = "capability: expired: caveat"
	}
	return fmt.Sprintf("%s %d (%s): %s", prefix, e.Index, e.Caveat, e.Reason)
}

// Is reports ErrCaveat for every caveat and also ErrExpired for an expiry.
func (e *CaveatError) Is(target error) bool {
	return target == ErrCaveat || (target == ErrExpired && e.Caveat.kind == KindExpiry)
}

// RevokedError reports the lineage node whose revocation rejects a token.
type RevokedError struct {
	Lineage  []string // root first, down to the revoked node
	Epoch    uint64   // the token's epoch
	MinEpoch uint64   // the lowest epoch the node still accepts
}

func (e *RevokedError) Error() string {
	return fmt.Sprintf("capability: revoked: node %s accepts epoch >= %d, token has epoch %d",
		strings.Join(e.Lineage, "/"), e.MinEpoch, e.Epoch)
}

// Is reports ErrRevoked.
func (e *RevokedError) Is(target error) bool { return target == ErrRevoked }

// detailError is a sentinel with details: "<sentinel>: <detail>".
type detailError struct {
	sentinel error
	detail   string
}

func (e *detailError) Error() string { return e.sentinel.Error() + ": " + e.detail }
func (e *detailError) Unwrap() error { return e.sentinel }

func detailf(sentinel error, format string, args ...any) error {
	return &detailError{sentinel: sentinel, detail: fmt.Sprintf(format, args...)}
}

// malformed returns a decoding error matching ErrMalformed.
func malformed(detail string) error { return &detailError{sentinel: ErrMalformed, detail: detail} }
