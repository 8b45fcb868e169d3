package capability

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"hash"
	"sync"
)

// DefaultMemo is the number of verified chains a Verifier remembers.
const DefaultMemo = 4096

// Verifier is Verify bound to one root key, for a service that verifies
// many requests (the gateway, the durable server). It does the same checks
// in the same order with the same errors, faster in two ways:
//
//   - the root key's HMAC pads are hashed once, not on every call (the
//     first link of every chain starts from the saved SHA-256 states);
//   - it remembers the chains it has verified: a token whose identifier,
//     caveats and signature are byte for byte those of a token verified
//     before skips the HMAC chain (revocation and every caveat are still
//     evaluated against the request on every call). A remembered chain is
//     only ever one this key signed, and bytes are compared in full, so the
//     memo cannot make a token verify that Verify would reject.
//
// A Verifier is safe for concurrent use. Verify allocates only when it
// remembers a new chain.
type Verifier struct {
	key  []byte
	pool sync.Pool // *rootMAC
	max  int

	mu   sync.RWMutex
	memo map[[sigLen]byte]*chain
}

// chain is a verified token's signed bytes, kept to compare in full.
type chain struct {
	id      []byte
	caveats [][]byte
}

type rootMAC struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

// NewVerifier returns a Verifier for key (at least MinKeyLen bytes) that
// remembers up to memo verified chains (0 means DefaultMemo; negative
// disables the memo).
func NewVerifier(key []byte, memo int) (*Verifier, error) {
	if len(key) < MinKeyLen {
		return nil, ErrKey
	}
	if memo == 0 {
		memo = DefaultMemo
	}
	v := &Verifier{key: bytes.Clone(key), max: memo}
	v.pool.New = func() any { return &rootMAC{h: hmac.New(sha256.New, v.key)} }
	if memo > 0 {
		v.memo = make(map[[sigLen]byte]*chain)
	}
	return v, nil
}

// Verify is Verify(key, tok, req, revoker) with the Verifier's key.
func (v *Verifier) Verify(tok *Token, req Request, revoker Revoker) error {
	if err := checkShape(tok); err != nil {
		return err
	}
	if !v.remembered(tok) {
		rm := v.pool.Get().(*rootMAC)
		rm.h.Reset()
		rm.h.Write(tok.idRaw)
		sig := [sha256.Size]byte(rm.h.Sum(rm.sum[:0]))
		v.pool.Put(rm)
		for i := range tok.caveats {
			sig = mac(sig[:], tok.caveats[i].raw)
		}
		if subtle.ConstantTimeCompare(sig[:], tok.sig[:]) != 1 {
			return ErrBadSignature
		}
		v.remember(tok)
	}
	return checkRequest(tok, req, revoker)
}

// remembered reports whether tok's exact bytes were verified before.
func (v *Verifier) remembered(tok *Token) bool {
	if v.memo == nil {
		return false
	}
	v.mu.RLock()
	c := v.memo[tok.sig]
	v.mu.RUnlock()
	if c == nil || !bytes.Equal(c.id, tok.idRaw) || len(c.caveats) != len(tok.caveats) {
		return false
	}
	for i := range c.caveats {
		if !bytes.Equal(c.caveats[i], tok.caveats[i].raw) {
			return false
		}
	}
	return true
}

func (v *Verifier) remember(tok *Token) {
	if v.memo == nil {
		return
	}
	c := &chain{id: bytes.Clone(tok.idRaw), caveats: make([][]byte, len(tok.caveats))}
	for i := range tok.caveats {
		c.caveats[i] = bytes.Clone(tok.caveats[i].raw)
	}
	v.mu.Lock()
	if len(v.memo) >= v.max {
		clear(v.memo) // simple and bounded; a busy service refills it at once
	}
	v.memo[tok.sig] = c
	v.mu.Unlock()
}
