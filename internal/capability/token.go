// Package capability implements apiary's capability tokens: macaroon-style
// bearer tokens made of an identifier and a chain of typed caveats, signed by
// an HMAC-SHA256 chain rooted in a secret key.
//
// Construction: with root key K and identifier id = (root, lineage path,
// epoch), sig_0 = HMAC(K, id) and sig_i = HMAC(sig_{i-1}, caveat_i); the
// token carries id, the caveats and sig_n. Anyone holding a token can
// attenuate it offline by appending caveats, because sig_n is the key for
// the next link; nobody without K can remove or change a caveat. Verify
// recomputes the chain, compares signatures in constant time and evaluates
// every caveat against the request, so an appended caveat can only narrow
// what the token allows, never widen it.
//
// Revocation works by lineage epochs: each token names the node it was
// issued under (root, path segments and any Lineage caveats) and the epoch it
// was issued at. Revoking a node is one write to a Revoker (O(1), whatever
// the number of tokens); Verify then rejects every token whose lineage passes
// through that node and whose epoch predates the revocation.
//
// Tokens travel as text: "apcap." followed by the unpadded base64url form of
// a length-prefixed binary encoding. Decode is strict: any text that is not
// the exact canonical encoding of a token is rejected with ErrMalformed.
package capability

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"time"
	"unicode/utf8"
)

// Format limits. A token built by Attenuate beyond MaxCaveats never verifies.
const (
	MinKeyLen     = 32       // bytes of root key required by Mint and Verify
	MaxCaveats    = 256      // caveats per token
	MaxEncodedLen = 64 << 10 // bytes of token text accepted by Decode
	textPrefix    = "apcap." // prefix of the text form
	version       = byte(1)  // first byte of the binary form
	sigLen        = 32       // HMAC-SHA256 output
	maxLineage    = 64       // segments in an ID path
)

var b64 = base64.RawURLEncoding.Strict()

// ID identifies a token's issuer node and issue epoch; it is the input of
// the chain's first HMAC.
type ID struct {
	Root  string   // root of the lineage (a deployment or run); non-empty
	Path  []string // lineage below the root, outermost first; segments non-empty
	Epoch uint64   // issue epoch, compared with the Revoker's per-node minimum
}

// Spend is an amount of money and tokens.
type Spend struct {
	Tokens   int64 // model tokens, input plus output
	MicroUSD int64 // US dollars times 1e6
}

// Request is what a holder asks to do; Verify evaluates every caveat against
// it. Zero fields mean "not applicable": no tool, no writes, no network, no
// spend, no spawn. Now is required by expiry caveats.
type Request struct {
	Tool  string    // tool being called, if any
	Paths []string  // clean paths the request writes
	Host  string    // network host contacted ("api.example.com" or "host:port")
	Now   time.Time // the verifier's clock
	Spend Spend     // the holder's cumulative spend including this request
	Depth int       // spawn levels below the holder the request creates
	Fence uint64    // the verifier's current fencing token for the holder's lease; 0 if unknown
}

// Token is a capability token. It is immutable: Attenuate and Derive return
// new tokens. A *Token is safe for concurrent use.
type Token struct {
	id      ID
	idRaw   []byte // canonical encoding of id; signed by the root key
	caveats []Caveat
	sig     [sigLen]byte
	nodes   []Node // lineage nodes from the root down, for revocation checks
}

// Mint issues a token for id with the given caveats, signed with key (at
// least MinKeyLen bytes). Zero caveats are skipped.
func Mint(key []byte, id ID, caveats ...Caveat) (*Token, error) {
	if len(key) < MinKeyLen {
		return nil, ErrKey
	}
	if err := validID(id); err != nil {
		return nil, err
	}
	id.Path = append([]string(nil), id.Path...)
	t := &Token{id: id, idRaw: appendID(nil, id)}
	t.sig = mac(key, t.idRaw)
	t.nodes = make([]Node, 0, 1+len(id.Path))
	for i := range 1 + len(id.Path) {
		t.nodes = append(t.nodes, nodeOf(id.Root, id.Path[:i]))
	}
	return t.Attenuate(caveats...), nil
}

func validID(id ID) error {
	if id.Root == "" || !utf8.ValidString(id.Root) {
		return detailf(ErrInvalid, "root must be a non-empty UTF-8 string")
	}
	if len(id.Path) > maxLineage {
		return detailf(ErrInvalid, "lineage deeper than %d", maxLineage)
	}
	for _, s := range id.Path {
		if s == "" || !utf8.ValidString(s) {
			return detailf(ErrInvalid, "lineage segments must be non-empty UTF-8 strings")
		}
	}
	return nil
}

// Attenuate returns a new token with caveats appended to t's chain; t is not
// modified. It needs no key. Zero caveats are skipped. A token with more
// than MaxCaveats caveats never verifies.
func (t *Token) Attenuate(caveats ...Caveat) *Token {
	n := &Token{id: t.id, idRaw: t.idRaw, sig: t.sig}
	n.caveats = append(make([]Caveat, 0, len(t.caveats)+len(caveats)), t.caveats...)
	n.nodes = t.nodes
	grew := false
	for _, c := range caveats {
		if c.kind == 0 {
			continue
		}
		n.caveats = append(n.caveats, c)
		n.sig = mac(n.sig[:], c.raw)
		if c.kind == KindLineage && len(n.nodes) > 0 { // no nodes: a zero Token, which never verifies
			if !grew {
				n.nodes = append([]Node(nil), t.nodes...)
				grew = true
			}
			n.nodes = append(n.nodes, n.nodes[len(n.nodes)-1].child(c.strs[0]))
		}
	}
	return n
}

// ID returns the token's identifier (a copy).
func (t *Token) ID() ID {
	id := t.id
	id.Path = append([]string(nil), id.Path...)
	return id
}

// Caveats returns the token's caveats in chain order (a copy of the slice).
func (t *Token) Caveats() []Caveat { return append([]Caveat(nil), t.caveats...) }

// Lineage returns the token's full lineage: root, ID path, then the segments
// of its Lineage caveats.
func (t *Token) Lineage() []string {
	out := append([]string{t.id.Root}, t.id.Path...)
	for _, c := range t.caveats {
		if c.kind == KindLineage {
			out = append(out, c.strs[0])
		}
	}
	return out
}

// Verify checks tok against the root key and evaluates every caveat against
// req. revoker may be nil (no revocation store). It returns nil if the token
// admits the request, or an error matching ErrKey, ErrMalformed,
// ErrBadSignature, ErrRevoked or ErrCaveat (ErrExpired for expiry). The
// signature is checked before anything else. Verify does not allocate when
// it succeeds.
func Verify(key []byte, tok *Token, req Request, revoker Revoker) error {
	if len(key) < MinKeyLen {
		return ErrKey
	}
	if err := checkShape(tok); err != nil {
		return err
	}
	sig := mac(key, tok.idRaw)
	for i := range tok.caveats {
		sig = mac(sig[:], tok.caveats[i].raw)
	}
	if subtle.ConstantTimeCompare(sig[:], tok.sig[:]) != 1 {
		return ErrBadSignature
	}
	return checkRequest(tok, req, revoker)
}

// checkShape rejects a token that can never verify.
func checkShape(tok *Token) error {
	if tok == nil || len(tok.idRaw) == 0 {
		return malformed("nil token")
	}
	if len(tok.caveats) > MaxCaveats {
		return malformed("too many caveats")
	}
	return nil
}

// checkRequest evaluates revocation and every caveat of a token whose
// signature is good.
func checkRequest(tok *Token, req Request, revoker Revoker) error {
	if revoker != nil {
		for i, n := range tok.nodes {
			if min := revoker.MinEpoch(n); tok.id.Epoch < min {
				return &RevokedError{Lineage: tok.Lineage()[:i+1], Epoch: tok.id.Epoch, MinEpoch: min}
			}
		}
	}
	for i := range tok.caveats {
		if reason, ok := tok.caveats[i].check(&req); !ok {
			return &CaveatError{Index: i, Caveat: tok.caveats[i], Reason: reason}
		}
	}
	return nil
}

// appendID appends the canonical binary encoding of id.
func appendID(b []byte, id ID) []byte {
	b = append(b, version)
	b = appendStr(b, id.Root)
	b = appendStrList(b, id.Path)
	return binary.AppendUvarint(b, id.Epoch)
}

// MarshalBinary returns the token's binary form: id, caveat count, each
// caveat length-prefixed, then the 32-byte signature.
func (t *Token) MarshalBinary() ([]byte, error) { return t.appendBinary(nil), nil }

func (t *Token) appendBinary(b []byte) []byte {
	b = append(b, t.idRaw...)
	b = binary.AppendUvarint(b, uint64(len(t.caveats)))
	for _, c := range t.caveats {
		b = binary.AppendUvarint(b, uint64(len(c.raw)))
		b = append(b, c.raw...)
	}
	return append(b, t.sig[:]...)
}

// String returns the token's text form ("apcap." + base64url).
func (t *Token) String() string {
	bin := t.appendBinary(nil)
	out := make([]byte, len(textPrefix)+b64.EncodedLen(len(bin)))
	copy(out, textPrefix)
	b64.Encode(out[len(textPrefix):], bin)
	return string(out)
}

// MarshalText returns the text form, so a *Token embeds in JSON as a string.
func (t *Token) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText decodes the text form into t.
func (t *Token) UnmarshalText(text []byte) error {
	d, err := Decode(string(text))
	if err != nil {
		return err
	}
	*t = *d
	return nil
}

// Decode parses a token's text form. It rejects, with an error matching
// ErrMalformed, anything that is not exactly the canonical encoding of a
// well-formed token. It does not check the signature: use Verify.
func Decode(s string) (*Token, error) {
	if len(s) > MaxEncodedLen {
		return nil, malformed("longer than MaxEncodedLen")
	}
	body, ok := strings.CutPrefix(s, textPrefix)
	if !ok {
		return nil, malformed("missing " + textPrefix + " prefix")
	}
	bin, err := b64.DecodeString(body)
	if err != nil {
		return nil, malformed("bad base64url")
	}
	t, err := parseBinary(bin)
	if err != nil {
		return nil, err
	}
	if t.String() != s {
		return nil, malformed("not in canonical form")
	}
	return t, nil
}

// parseBinary decodes the binary form and checks that it is canonical.
func parseBinary(bin []byte) (*Token, error) {
	r := reader{b: bin}
	if r.byte() != version {
		return nil, malformed("unknown version")
	}
	var id ID
	id.Root = r.str()
	id.Path = r.strList()
	if len(id.Path) > maxLineage {
		r.fail("lineage too deep")
	}
	id.Epoch = r.uvarint()
	if r.err != nil {
		return nil, r.err
	}
	t := &Token{id: id, idRaw: bin[:len(bin)-len(r.b)]}
	n := r.count()
	if n > MaxCaveats {
		return nil, malformed("too many caveats")
	}
	t.caveats = make([]Caveat, 0, n)
	for range n {
		size := r.count()
		if r.err != nil {
			return nil, r.err
		}
		c, err := parseCaveat(r.b[:size:size])
		if err != nil {
			return nil, err
		}
		r.b = r.b[size:]
		t.caveats = append(t.caveats, c)
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != sigLen {
		return nil, malformed("bad signature length")
	}
	copy(t.sig[:], r.b)
	for i := range 1 + len(id.Path) {
		t.nodes = append(t.nodes, nodeOf(id.Root, id.Path[:i]))
	}
	for _, c := range t.caveats {
		if c.kind == KindLineage {
			t.nodes = append(t.nodes, t.nodes[len(t.nodes)-1].child(c.strs[0]))
		}
	}
	// Canonical: re-encoding yields the input byte for byte (minimal
	// varints, no slack).
	if !bytes.Equal(t.appendBinary(nil), bin) || !canonicalCaveats(t.caveats) {
		return nil, malformed("not in canonical form")
	}
	return t, nil
}

// canonicalCaveats reports whether every caveat's bytes equal the encoding
// of its parsed value.
func canonicalCaveats(cs []Caveat) bool {
	for i := range cs {
		c := &cs[i]
		var enc []byte
		switch c.kind {
		case KindTools, KindPaths, KindLineage:
			enc = encodeStrs(c.kind, c.strs).raw
		case KindNetwork:
			enc = c.appendNet(nil)
		case KindExpiry:
			enc = ExpiresAt(time.Unix(c.unix, 0)).raw
		case KindBudget:
			enc = c.appendBudget(nil)
		case KindDepth, KindFence:
			enc = encodeNum(c.kind, c.num).raw
		}
		if !bytes.Equal(enc, c.raw) {
			return false
		}
	}
	return true
}
