package capability

import (
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// admitting returns a random chain of caveats that all admit okRequest.
func admitting(r *rand.Rand) []Caveat {
	pool := []Caveat{
		Tools("read", "write"), Tools("read"), PathPrefixes("/ws"), PathPrefixes("/ws/src", "/tmp"),
		Hosts("api.example.com"), AnyNetwork(), ExpiresAt(testNow.Add(time.Duration(1+r.IntN(100)) * time.Minute)),
		Budget(int64(10+r.IntN(1000)), -1), Budget(-1, int64(5+r.IntN(1000))), MaxDepth(1 + r.IntN(3)),
		Lineage("seg"), Lineage("other"), Fence(uint64(7 + r.IntN(3))),
	}
	var out []Caveat
	for range r.IntN(6) {
		out = append(out, pool[r.IntN(len(pool))])
	}
	return out
}

func textOf(bin []byte) string { return textPrefix + base64.RawURLEncoding.EncodeToString(bin) }

// mutate applies one mutation to tok's binary form; ok is false when the
// mutation does not apply (for example removing a caveat from none).
func mutate(tok, other *Token, op uint8, pos uint16, bit uint8) (bin []byte, ok bool) {
	orig := tok.appendBinary(nil)
	n := len(tok.caveats)
	switch op % 7 {
	case 0: // flip one bit
		bin = append([]byte(nil), orig...)
		bin[int(pos)%len(bin)] ^= 1 << (bit % 8)
	case 1: // truncate
		bin = orig[:int(pos)%len(orig)]
	case 2: // remove a caveat, keep the signature
		if n == 0 {
			return nil, false
		}
		i := int(pos) % n
		m := *tok
		m.caveats = append(append([]Caveat(nil), tok.caveats[:i]...), tok.caveats[i+1:]...)
		bin = m.appendBinary(nil)
	case 3: // swap two caveats
		if n < 2 {
			return nil, false
		}
		i, j := int(pos)%n, int(bit)%n
		m := *tok
		m.caveats = append([]Caveat(nil), tok.caveats...)
		m.caveats[i], m.caveats[j] = m.caveats[j], m.caveats[i]
		bin = m.appendBinary(nil)
	case 4: // signature from another token
		m := *tok
		m.sig = other.sig
		bin = m.appendBinary(nil)
	case 5: // another token's caveats under this signature
		m := *tok
		m.caveats = other.caveats
		bin = m.appendBinary(nil)
	case 6: // append a caveat without extending the chain
		m := *tok
		m.caveats = append(append([]Caveat(nil), tok.caveats...), Tools("read"))
		bin = m.appendBinary(nil)
	}
	return bin, string(bin) != string(orig)
}

func checkMutation(t *testing.T, tok, other *Token, op uint8, pos uint16, bit uint8) {
	t.Helper()
	bin, ok := mutate(tok, other, op, pos, bit)
	if !ok {
		return
	}
	m, err := Decode(textOf(bin))
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("op %d: decode error %v does not match ErrMalformed", op, err)
		}
		return
	}
	if err := Verify(testKey, m, okRequest, nil); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("op %d pos %d bit %d: mutated token verified or failed otherwise: %v\norig %v\nmut  %v", op, pos, bit, err, tok.Caveats(), m.Caveats())
	}
	// A Verifier that remembers the original chain must not take the
	// mutation for it.
	v, err := NewVerifier(testKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(tok, okRequest, nil); err != nil {
		t.Fatalf("Verifier rejects the original: %v", err)
	}
	if err := v.Verify(m, okRequest, nil); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("op %d pos %d bit %d: mutated token passed the Verifier: %v", op, pos, bit, err)
	}
}

// FuzzMutatedToken: no mutation of a valid token (bit flip, truncation, a
// caveat removed, caveats reordered, a signature or caveats from another
// token, an unsigned caveat appended) ever verifies.
func FuzzMutatedToken(f *testing.F) {
	for op := range uint8(7) {
		f.Add(uint64(op), op, uint16(op*13), uint8(op))
	}
	f.Fuzz(func(t *testing.T, seed uint64, op uint8, pos uint16, bit uint8) {
		r := rand.New(rand.NewPCG(seed, 99))
		tok := mustMint(t, testKey, ID{Root: "r", Path: []string{"p"}, Epoch: seed % 5}, admitting(r)...)
		other := mustMint(t, testKey, ID{Root: "r", Path: []string{"p"}, Epoch: seed % 5}, admitting(r)...)
		if err := Verify(testKey, tok, okRequest, nil); err != nil {
			t.Fatalf("unmutated token: %v", err)
		}
		checkMutation(t, tok, other, op, pos, bit)
	})
}

// TestEveryMutationFails runs every single-bit flip, every truncation and
// every structural mutation of a few tokens.
func TestEveryMutationFails(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 5))
	for range 4 {
		tok := mustMint(t, testKey, testRoot, admitting(r)...)
		other := mustMint(t, testKey, testRoot, admitting(r)...)
		size := len(tok.appendBinary(nil))
		for pos := range size {
			for bit := range 8 {
				checkMutation(t, tok, other, 0, uint16(pos), uint8(bit))
			}
			checkMutation(t, tok, other, 1, uint16(pos), 0)
		}
		for i := range len(tok.caveats) {
			checkMutation(t, tok, other, 2, uint16(i), 0)
			for j := range len(tok.caveats) {
				checkMutation(t, tok, other, 3, uint16(i), uint8(j))
			}
		}
		for op := uint8(4); op < 7; op++ {
			checkMutation(t, tok, other, op, 0, 0)
		}
	}
}

func TestDecodeMalformed(t *testing.T) {
	t.Parallel()
	good := mustMint(t, testKey, testRoot, Tools("read"), MaxDepth(1))
	bin := good.appendBinary(nil)
	text := good.String()
	withCaveat := func(raw []byte) string {
		m := *good
		m.caveats = []Caveat{{kind: Kind(raw[0]), raw: raw}}
		return textOf(m.appendBinary(nil))
	}
	tests := map[string]string{
		"empty":                 "",
		"no prefix":             strings.TrimPrefix(text, textPrefix),
		"wrong prefix":          "apcap2." + strings.TrimPrefix(text, textPrefix),
		"std base64 alphabet":   textPrefix + base64.RawStdEncoding.EncodeToString(append([]byte{0xfb, 0xff}, bin...)),
		"padding":               textPrefix + base64.URLEncoding.EncodeToString(bin[:len(bin)-1]),
		"newline":               text[:10] + "\n" + text[10:],
		"trailing byte":         textOf(append(append([]byte(nil), bin...), 0)),
		"short signature":       textOf(bin[:len(bin)-1]),
		"version 2":             textOf(append([]byte{2}, bin[1:]...)),
		"non-minimal varint":    withCaveat([]byte{byte(KindDepth), 0x81, 0x00}),
		"unknown kind":          withCaveat([]byte{99, 1}),
		"empty tool name":       withCaveat([]byte{byte(KindTools), 1, 0}),
		"unclean path":          withCaveat([]byte{byte(KindPaths), 1, 3, '/', 'a', '/'}),
		"invalid utf8":          withCaveat([]byte{byte(KindTools), 1, 1, 0xff}),
		"list longer than data": withCaveat([]byte{byte(KindTools), 200, 1, 'a'}),
		"caveat trailing bytes": withCaveat([]byte{byte(KindDepth), 1, 1}),
		"bad network mode":      withCaveat([]byte{byte(KindNetwork), 7}),
		"budget no units":       withCaveat([]byte{byte(KindBudget), 0}),
		"budget unknown unit":   withCaveat([]byte{byte(KindBudget), 4, 1}),
		"huge budget":           withCaveat([]byte{byte(KindBudget), 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}),
		"empty caveat":          textOf(append(append(append([]byte(nil), good.idRaw...), 1, 0), good.sig[:]...)),
		"too long":              textPrefix + strings.Repeat("A", MaxEncodedLen),
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tok, err := Decode(s)
			if !errors.Is(err, ErrMalformed) || tok != nil {
				t.Fatalf("Decode = %v, %v; want ErrMalformed", tok, err)
			}
		})
	}
	if _, err := Decode(text); err != nil {
		t.Fatalf("the unmodified token: %v", err)
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts is canonical:
// it re-encodes to the same text and can be verified and inspected.
func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 1))
	for range 8 {
		f.Add(mustMint(f, testKey, testRoot, admitting(r)...).String())
	}
	f.Add(mustMint(f, testKey, testRoot, allKinds...).String())
	f.Add("apcap.")
	f.Add("apcap.AQ")
	f.Add("garbage")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := Decode(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		if tok.String() != s {
			t.Fatalf("accepted non-canonical text %q (canonical %q)", s, tok.String())
		}
		_ = Verify(testKey, tok, okRequest, NewEpochs())
		_ = Inspect(tok).String()
		if _, err := tok.Derive("x", Limits{Tools: []string{"read"}}); err != nil && !errors.Is(err, ErrWiden) && !errors.Is(err, ErrDepth) {
			t.Fatalf("Derive: %v", err)
		}
	})
}
