package capability

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestVerifierAgreesWithVerify: the Verifier accepts and rejects exactly
// what Verify does, on first sight and when a chain is remembered: a token
// with the same signature but altered or removed caveats never verifies.
func TestVerifierAgreesWithVerify(t *testing.T) {
	t.Parallel()
	v, err := NewVerifier(testKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	tok := benchToken(t)
	ep := NewEpochs()
	ok := Request{Tool: "read", Paths: []string{"/ws/src/a.go"}, Now: testNow, Spend: Spend{MicroUSD: 10}}
	bad := Request{Tool: "deploy", Now: testNow}
	otherKey := append([]byte{}, testKey...)
	otherKey[0] ^= 1
	forged := mustMint(t, otherKey, tok.ID(), tok.Caveats()...)
	// Same signature as tok, one caveat fewer: what stripping would look like.
	stripped := &Token{id: tok.id, idRaw: tok.idRaw, caveats: tok.caveats[:3], sig: tok.sig, nodes: tok.nodes}
	altered := &Token{id: tok.id, idRaw: tok.idRaw, caveats: slices.Clone(tok.caveats), sig: tok.sig, nodes: tok.nodes}
	altered.caveats[3] = Budget(-1, 9_000_000)
	for pass := range 2 { // the second pass runs with tok remembered
		for _, tc := range []struct {
			name string
			tok  *Token
			req  Request
		}{
			{"good", tok, ok}, {"caveat rejects", tok, bad}, {"forged", forged, ok},
			{"stripped", stripped, ok}, {"altered", altered, ok}, {"nil", nil, ok},
		} {
			want := Verify(testKey, tc.tok, tc.req, ep)
			got := v.Verify(tc.tok, tc.req, ep)
			if (want == nil) != (got == nil) || want != nil && got.Error() != want.Error() {
				t.Errorf("pass %d, %s: Verifier %v, Verify %v", pass, tc.name, got, want)
			}
		}
	}
	for ep.Current("run-0195") <= tok.ID().Epoch {
		ep.Revoke("run-0195", "task-7")
	}
	if err := v.Verify(tok, ok, ep); !errors.Is(err, ErrRevoked) {
		t.Errorf("remembered chain ignores revocation: %v", err)
	}
	if _, err := NewVerifier(testKey[:5], 0); !errors.Is(err, ErrKey) {
		t.Errorf("short key: %v", err)
	}
}

func TestVerifierRememberedDoesNotAllocate(t *testing.T) {
	v, _ := NewVerifier(testKey, 0)
	tok := benchToken(t)
	req := Request{Tool: "read", Paths: []string{"/ws/src/a.go"}, Now: testNow}
	if err := v.Verify(tok, req, NewEpochs()); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = v.Verify(tok, req, nil) }); n != 0 {
		t.Errorf("remembered Verify allocates %.1f times", n)
	}
}

// TestVerifierMemoBounded: the memo never grows past its size and an
// evicted chain is verified again, correctly.
func TestVerifierMemoBounded(t *testing.T) {
	t.Parallel()
	v, _ := NewVerifier(testKey, 4)
	req := Request{Now: testNow}
	for i := range 20 {
		tok := mustMint(t, testKey, ID{Root: "r", Path: []string{"t" + string(rune('a'+i))}})
		if err := v.Verify(tok, req, nil); err != nil {
			t.Fatal(err)
		}
		if len(v.memo) > 4 {
			t.Fatalf("memo holds %d", len(v.memo))
		}
	}
	off, _ := NewVerifier(testKey, -1)
	if err := off.Verify(benchToken(t), Request{Now: testNow}, nil); err != nil || off.memo != nil {
		t.Errorf("memo disabled: %v, %v", err, off.memo)
	}
}

// TestEpochStateRoundTrip: a snapshot restores every revocation and clock.
func TestEpochStateRoundTrip(t *testing.T) {
	t.Parallel()
	e := NewEpochs()
	e.Revoke("run", "a", "attempt-1")
	e.Revoke("run", "b")
	e.Revoke("other")
	b, err := json.Marshal(e.State())
	if err != nil {
		t.Fatal(err)
	}
	var s EpochState
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	r, err := NewEpochsFrom(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []Node{NodeOf("run", "a", "attempt-1"), NodeOf("run", "b"), NodeOf("other"), NodeOf("run", "a")} {
		if r.MinEpoch(n) != e.MinEpoch(n) {
			t.Errorf("node %q: %d, want %d", n, r.MinEpoch(n), e.MinEpoch(n))
		}
	}
	if r.Current("run") != e.Current("run") || r.Current("run") != 2 {
		t.Errorf("clock %d, want %d", r.Current("run"), e.Current("run"))
	}
	if _, err := NewEpochsFrom(EpochState{Revoked: []RevokedNode{{}}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty lineage: %v", err)
	}
}

// TestFileRevoker: revocations written to the file by another process are
// seen once the file changes; a corrupt file fails closed; a missing one
// revokes nothing.
func TestFileRevoker(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "revoked.json")
	fr := NewFileRevoker(path, 0, nil)
	tok := mustMint(t, testKey, ID{Root: "run", Path: []string{"a"}, Epoch: 0})
	req := Request{Now: testNow}
	if err := Verify(testKey, tok, req, fr); err != nil {
		t.Fatalf("no file: %v", err)
	}
	e := NewEpochs()
	e.Revoke("run", "a")
	write := func(b []byte) {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		// A different size or mtime marks the change.
		if err := os.Chtimes(tmp, time.Now(), time.Now().Add(time.Duration(len(b))*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(e.State())
	write(b)
	if err := Verify(testKey, tok, req, fr); !errors.Is(err, ErrRevoked) {
		t.Errorf("after revocation: %v", err)
	}
	write([]byte("{not json"))
	other := mustMint(t, testKey, ID{Root: "run", Path: []string{"b"}, Epoch: 5})
	if err := Verify(testKey, other, req, fr); !errors.Is(err, ErrRevoked) {
		t.Errorf("corrupt file does not fail closed: %v", err)
	}
	os.Remove(path)
	if err := Verify(testKey, other, req, fr); err != nil {
		t.Errorf("file removed: %v", err)
	}
}

// BenchmarkVerifierCold is the Verifier on a chain it has not seen: the
// root key's pads come precomputed.
func BenchmarkVerifierCold(b *testing.B) {
	tok := benchToken(b)
	v, _ := NewVerifier(testKey, -1)
	ep := NewEpochs()
	req := Request{Tool: "read", Paths: []string{"/ws/src/a.go"}, Now: testNow, Spend: Spend{MicroUSD: 10}}
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Verify(tok, req, ep); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifierWarm is the gateway's steady state: the same agent's
// token on every request, its chain remembered.
func BenchmarkVerifierWarm(b *testing.B) {
	tok := benchToken(b)
	v, _ := NewVerifier(testKey, 0)
	ep := NewEpochs()
	req := Request{Tool: "read", Paths: []string{"/ws/src/a.go"}, Now: testNow, Spend: Spend{MicroUSD: 10}}
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Verify(tok, req, ep); err != nil {
			b.Fatal(err)
		}
	}
}
