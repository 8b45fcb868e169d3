package capability

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	testKey   = bytes.Repeat([]byte{0x42}, 32)
	otherKey  = bytes.Repeat([]byte{0x43}, 32)
	testNow   = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	testRoot  = ID{Root: "run-1", Path: []string{"plan"}, Epoch: 0}
	allKinds  = []Caveat{Tools("write", "read"), PathPrefixes("/ws/src", "/ws/docs/"), Hosts("API.example.com"), ExpiresAt(testNow.Add(time.Hour)), Budget(1000, 2_500_000), MaxDepth(2), Lineage("t1"), Fence(7)}
	okRequest = Request{Tool: "read", Paths: []string{"/ws/src/a.go"}, Host: "api.example.com:443", Now: testNow, Spend: Spend{Tokens: 10, MicroUSD: 5}, Depth: 1, Fence: 7}
)

func mustMint(t testing.TB, key []byte, id ID, cs ...Caveat) *Token {
	t.Helper()
	tok, err := Mint(key, id, cs...)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestMACMatchesStdlib(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for _, kl := range []int{0, 1, 32, 63, 64, 65, 200} {
		for _, ml := range []int{0, 1, 55, 56, 64, 255, 256, 257, 1000} {
			key := make([]byte, kl)
			msg := make([]byte, ml)
			for i := range key {
				key[i] = byte(r.Uint32())
			}
			for i := range msg {
				msg[i] = byte(r.Uint32())
			}
			h := hmac.New(sha256.New, key)
			h.Write(msg)
			if got := mac(key, msg); !bytes.Equal(got[:], h.Sum(nil)) {
				t.Errorf("mac(key %d bytes, msg %d bytes) differs from crypto/hmac", kl, ml)
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	tok := mustMint(t, testKey, testRoot, allKinds...)
	if err := Verify(testKey, tok, okRequest, nil); err != nil {
		t.Fatalf("fresh token: %v", err)
	}
	text := tok.String()
	if !strings.HasPrefix(text, "apcap.") || strings.ContainsAny(text, "+/=\n") {
		t.Fatalf("text form %q is not prefixed base64url", text)
	}
	back, err := Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	if back.String() != text {
		t.Fatalf("re-encoded %q, want %q", back.String(), text)
	}
	if err := Verify(testKey, back, okRequest, nil); err != nil {
		t.Fatalf("decoded token: %v", err)
	}
	if got, want := back.Lineage(), []string{"run-1", "plan", "t1"}; !slices.Equal(got, want) {
		t.Errorf("lineage %v, want %v", got, want)
	}
	// JSON embedding through MarshalText/UnmarshalText.
	js, err := json.Marshal(struct{ Cap *Token }{tok})
	if err != nil {
		t.Fatal(err)
	}
	var into struct{ Cap *Token }
	if err := json.Unmarshal(js, &into); err != nil {
		t.Fatal(err)
	}
	if into.Cap.String() != text {
		t.Errorf("JSON round trip changed the token")
	}
	d := Inspect(back)
	if len(d.Caveats) != len(allKinds) || d.Caveats[0].Text != "tools [read write]" || d.Caveats[2].Hosts[0] != "api.example.com" {
		t.Errorf("Inspect = %+v", d)
	}
	if s := d.String(); !strings.Contains(s, "budget 1000 tokens, $2.5") || !strings.Contains(s, "paths [/ws/docs /ws/src]") {
		t.Errorf("Inspect text:\n%s", s)
	}
}

func TestMintRejects(t *testing.T) {
	t.Parallel()
	if _, err := Mint(testKey[:31], testRoot); !errors.Is(err, ErrKey) {
		t.Errorf("short key: %v", err)
	}
	if _, err := Mint(testKey, ID{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty root: %v", err)
	}
	if _, err := Mint(testKey, ID{Root: "r", Path: []string{""}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty segment: %v", err)
	}
	tok := mustMint(t, testKey, testRoot)
	if err := Verify(testKey[:16], tok, okRequest, nil); !errors.Is(err, ErrKey) {
		t.Errorf("verify short key: %v", err)
	}
	if err := Verify(testKey, nil, okRequest, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("verify nil token: %v", err)
	}
}

func TestVerifyCaveats(t *testing.T) {
	t.Parallel()
	with := func(f func(r *Request)) Request {
		r := okRequest
		f(&r)
		return r
	}
	tests := []struct {
		name    string
		caveat  Caveat
		req     Request
		wantErr error // nil: admitted
	}{
		{"tool listed", Tools("read"), okRequest, nil},
		{"tool not listed", Tools("write"), okRequest, ErrCaveat},
		{"no tool named", Tools("write"), with(func(r *Request) { r.Tool = "" }), nil},
		{"empty tool list", Tools(), okRequest, ErrCaveat},
		{"path under prefix", PathPrefixes("/ws"), okRequest, nil},
		{"path equals prefix", PathPrefixes("/ws/src/a.go"), okRequest, nil},
		{"sibling with shared string prefix", PathPrefixes("/ws"), with(func(r *Request) { r.Paths = []string{"/ws_evil/x"} }), ErrCaveat},
		{"dotdot escape", PathPrefixes("/ws"), with(func(r *Request) { r.Paths = []string{"/ws/../etc/passwd"} }), ErrCaveat},
		{"unclean double slash", PathPrefixes("/ws"), with(func(r *Request) { r.Paths = []string{"/ws//a"} }), ErrCaveat},
		{"one of two paths outside", PathPrefixes("/ws/src"), with(func(r *Request) { r.Paths = []string{"/ws/src/a", "/ws/b"} }), ErrCaveat},
		{"root prefix admits absolute", PathPrefixes("/"), okRequest, nil},
		{"relative prefix", PathPrefixes("src"), with(func(r *Request) { r.Paths = []string{"src/x.go"} }), nil},
		{"relative prefix rejects absolute", PathPrefixes("src"), okRequest, ErrCaveat},
		{"dot prefix rejects parent", PathPrefixes("."), with(func(r *Request) { r.Paths = []string{"../x"} }), ErrCaveat},
		{"dot prefix admits relative", PathPrefixes("."), with(func(r *Request) { r.Paths = []string{"a/b"} }), nil},
		{"no paths written", PathPrefixes("/nowhere"), with(func(r *Request) { r.Paths = nil }), nil},
		{"host with port vs bare entry", Hosts("api.example.com"), okRequest, nil},
		{"host port mismatch", Hosts("api.example.com:80"), okRequest, ErrCaveat},
		{"host other", Hosts("example.org"), okRequest, ErrCaveat},
		{"host suffix is not a match", Hosts("example.com"), okRequest, ErrCaveat},
		{"ipv6 with port", Hosts("::1"), with(func(r *Request) { r.Host = "[::1]:8080" }), nil},
		{"no network", NoNetwork(), okRequest, ErrCaveat},
		{"no network, no host", NoNetwork(), with(func(r *Request) { r.Host = "" }), nil},
		{"any network", AnyNetwork(), okRequest, nil},
		{"before expiry", ExpiresAt(testNow.Add(time.Second)), okRequest, nil},
		{"at expiry", ExpiresAt(testNow), okRequest, ErrExpired},
		{"after expiry", ExpiresAt(testNow.Add(-time.Hour)), okRequest, ErrExpired},
		{"no time in request", ExpiresAt(testNow.Add(time.Hour)), with(func(r *Request) { r.Now = time.Time{} }), ErrExpired},
		{"tokens within", Budget(10, -1), okRequest, nil},
		{"tokens over", Budget(9, -1), okRequest, ErrCaveat},
		{"usd over", Budget(-1, 4), okRequest, ErrCaveat},
		{"usd within, tokens unlimited", Budget(-1, 5), okRequest, nil},
		{"depth within", MaxDepth(1), okRequest, nil},
		{"depth over", MaxDepth(0), okRequest, ErrCaveat},
		{"fence current", Fence(7), okRequest, nil},
		{"fence stale", Fence(6), okRequest, ErrCaveat},
		{"fence unknown to verifier", Fence(1), with(func(r *Request) { r.Fence = 0 }), nil},
		{"lineage never rejects a request", Lineage("x"), okRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tok := mustMint(t, testKey, testRoot, Tools("read", "write"), tt.caveat)
			err := Verify(testKey, tok, tt.req, nil)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			var ce *CaveatError
			if !errors.As(err, &ce) || ce.Index != 1 || ce.Caveat.Kind() != tt.caveat.Kind() {
				t.Fatalf("error %v does not name caveat 1 (%s)", err, tt.caveat)
			}
			if errors.Is(err, ErrBadSignature) || errors.Is(err, ErrRevoked) {
				t.Fatalf("caveat error also matches another sentinel: %v", err)
			}
		})
	}
}

func TestBadSignature(t *testing.T) {
	t.Parallel()
	tok := mustMint(t, testKey, testRoot, Tools("read"))
	if err := Verify(otherKey, tok, okRequest, nil); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("other key: %v", err)
	}
	// Even a token whose caveats reject the request reports the signature
	// first when the key is wrong.
	if err := Verify(otherKey, tok.Attenuate(Tools("none")), okRequest, nil); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("other key, failing caveat: %v", err)
	}
}

func TestAttenuateDoesNotMutate(t *testing.T) {
	t.Parallel()
	parent := mustMint(t, testKey, testRoot, Tools("read", "write"))
	before := parent.String()
	child := parent.Attenuate(Tools("write"), Lineage("c"), Caveat{})
	if parent.String() != before {
		t.Fatal("Attenuate changed the receiver")
	}
	if len(child.Caveats()) != 3 {
		t.Fatalf("child has %d caveats, want 3 (zero caveat skipped)", len(child.Caveats()))
	}
	if slices.Equal(parent.Lineage(), child.Lineage()) {
		t.Fatal("lineage caveat did not extend the child's lineage")
	}
	if err := Verify(testKey, parent, okRequest, nil); err != nil {
		t.Fatalf("parent: %v", err)
	}
	if err := Verify(testKey, child, okRequest, nil); !errors.Is(err, ErrCaveat) {
		t.Fatalf("child allows read: %v", err)
	}
	// Appending a wider caveat does not widen.
	if err := Verify(testKey, child.Attenuate(Tools("read", "write")), okRequest, nil); !errors.Is(err, ErrCaveat) {
		t.Fatalf("re-widened child allows read: %v", err)
	}
	if err := Verify(testKey, parent.Attenuate(NoNetwork(), AnyNetwork()), okRequest, nil); !errors.Is(err, ErrCaveat) {
		t.Fatalf("any network after none: %v", err)
	}
}

// randomCaveat draws a caveat over a small universe so that random requests
// hit both sides of it.
func randomCaveat(r *rand.Rand) Caveat {
	pick := func(universe []string) []string {
		var out []string
		for _, s := range universe {
			if r.IntN(2) == 0 {
				out = append(out, s)
			}
		}
		return out
	}
	switch r.IntN(7) {
	case 0:
		return Tools(pick(toolUniverse)...)
	case 1:
		return PathPrefixes(pick(prefixUniverse)...)
	case 2:
		switch r.IntN(3) {
		case 0:
			return NoNetwork()
		case 1:
			return AnyNetwork()
		}
		return Hosts(pick(hostUniverse)...)
	case 3:
		return ExpiresAt(testNow.Add(time.Duration(r.IntN(7)-3) * time.Hour))
	case 4:
		return Budget(int64(r.IntN(200))-20, int64(r.IntN(200))-20)
	case 5:
		return MaxDepth(r.IntN(4))
	}
	return Fence(uint64(r.IntN(5)))
}

var (
	toolUniverse   = []string{"read", "write", "bash", "spawn"}
	prefixUniverse = []string{"/ws", "/ws/a", "/ws/a/b", "/ws/c", "/tmp"}
	pathUniverse   = []string{"/ws", "/ws/a", "/ws/a/b/c", "/ws/ab", "/ws/c/d", "/tmp/x", "/etc/passwd"}
	hostUniverse   = []string{"a.example", "b.example", "c.example:443"}
)

func randomRequest(r *rand.Rand) Request {
	req := Request{Now: testNow.Add(time.Duration(r.IntN(8)-4) * time.Hour), Depth: r.IntN(4), Fence: uint64(r.IntN(6))}
	if r.IntN(4) > 0 {
		req.Tool = toolUniverse[r.IntN(len(toolUniverse))]
	}
	for range r.IntN(3) {
		req.Paths = append(req.Paths, pathUniverse[r.IntN(len(pathUniverse))])
	}
	if r.IntN(3) > 0 {
		req.Host = append(hostUniverse, "c.example")[r.IntN(4)]
	}
	req.Spend = Spend{Tokens: int64(r.IntN(150)), MicroUSD: int64(r.IntN(150))}
	return req
}

// TestAttenuationOnlyNarrows: for random caveat chains, every request the
// child admits is admitted by the parent.
func TestAttenuationOnlyNarrows(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 11))
	var childOK, narrowed int
	for range 400 {
		var cs []Caveat
		for range r.IntN(4) {
			cs = append(cs, randomCaveat(r))
		}
		parent := mustMint(t, testKey, testRoot, cs...)
		var more []Caveat
		for range 1 + r.IntN(3) {
			more = append(more, randomCaveat(r))
		}
		child := parent.Attenuate(more...)
		for range 30 {
			req := randomRequest(r)
			cErr := Verify(testKey, child, req, nil)
			pErr := Verify(testKey, parent, req, nil)
			if cErr == nil && pErr != nil {
				t.Fatalf("child admits what parent rejects (%v)\nparent %v\nchild %v\nreq %+v", pErr, parent.Caveats(), child.Caveats(), req)
			}
			if cErr == nil {
				childOK++
			}
			if cErr != nil && pErr == nil {
				narrowed++
			}
		}
	}
	// Guard against a vacuous run: both outcomes occurred many times.
	if childOK < 100 || narrowed < 100 {
		t.Fatalf("weak sample: child admitted %d, narrowed %d", childOK, narrowed)
	}
}

func TestRevocation(t *testing.T) {
	t.Parallel()
	ep := NewEpochs()
	root := mustMint(t, testKey, ID{Root: "run", Epoch: ep.Current("run")}, MaxDepth(3))
	a, err := root.Derive("a", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := root.Derive("b", Limits{})
	ax, _ := a.Derive("x", Limits{})
	// A token minted (with the key) directly at path run/a/y.
	ay := mustMint(t, testKey, ID{Root: "run", Path: []string{"a", "y"}, Epoch: ep.Current("run")})
	req := Request{Now: testNow}
	for name, tok := range map[string]*Token{"root": root, "a": a, "b": b, "a/x": ax, "a/y": ay} {
		if err := Verify(testKey, tok, req, ep); err != nil {
			t.Fatalf("%s before revocation: %v", name, err)
		}
	}
	ep.Revoke("run", "a")
	for name, tok := range map[string]*Token{"a": a, "a/x": ax, "a/y": ay} {
		err := Verify(testKey, tok, req, ep)
		var re *RevokedError
		if !errors.Is(err, ErrRevoked) || !errors.As(err, &re) || strings.Join(re.Lineage, "/") != "run/a" {
			t.Errorf("%s after revoking run/a: %v", name, err)
		}
	}
	for name, tok := range map[string]*Token{"root": root, "b": b} {
		if err := Verify(testKey, tok, req, ep); err != nil {
			t.Errorf("%s after revoking run/a: %v", name, err)
		}
	}
	// A token minted for run/a after the revocation is valid.
	fresh := mustMint(t, testKey, ID{Root: "run", Path: []string{"a"}, Epoch: ep.Current("run")})
	if err := Verify(testKey, fresh, req, ep); err != nil {
		t.Errorf("fresh token under revoked node: %v", err)
	}
	// Revoking the root rejects everything issued before, the fresh one too.
	ep.Revoke("run")
	for name, tok := range map[string]*Token{"root": root, "b": b, "fresh": fresh} {
		if err := Verify(testKey, tok, req, ep); !errors.Is(err, ErrRevoked) {
			t.Errorf("%s after revoking run: %v", name, err)
		}
	}
	// Other roots are untouched.
	other := mustMint(t, testKey, ID{Root: "run2", Path: []string{"a"}})
	if err := Verify(testKey, other, req, ep); err != nil {
		t.Errorf("token of another root: %v", err)
	}
}

func TestNodeKeysDoNotCollide(t *testing.T) {
	t.Parallel()
	nodes := []Node{NodeOf("ab"), NodeOf("a", "b"), NodeOf("a", "b", ""), NodeOf("a\x01b"), NodeOf("a", "\x01b"), NodeOf("a")}
	for i := range nodes {
		for j := range i {
			if nodes[i] == nodes[j] {
				t.Errorf("nodes %d and %d collide: %q", i, j, nodes[i])
			}
		}
	}
}

func TestDerive(t *testing.T) {
	t.Parallel()
	exp := testNow.Add(time.Hour)
	parent := mustMint(t, testKey, testRoot, Tools("read", "write", "bash"), PathPrefixes("/ws"),
		Hosts("a.example", "b.example"), ExpiresAt(exp), Budget(1000, 5_000_000), MaxDepth(2))
	tests := []struct {
		name    string
		limits  Limits
		wantErr error
	}{
		{"inherit everything", Limits{}, nil},
		{"narrow all", Limits{Tools: []string{"read"}, Paths: []string{"/ws/a"}, Hosts: []string{"a.example"},
			Expiry: exp.Add(-time.Minute), MaxTokens: 500, MaxMicroUSD: 1_000_000, MaxDepth: 5}, nil},
		{"no network", Limits{Hosts: []string{}}, nil},
		{"extra tool", Limits{Tools: []string{"read", "spawn"}}, ErrWiden},
		{"path outside", Limits{Paths: []string{"/ws_evil"}}, ErrWiden},
		{"host outside", Limits{Hosts: []string{"c.example"}}, ErrWiden},
		{"later expiry", Limits{Expiry: exp.Add(time.Minute)}, ErrWiden},
		{"larger token budget", Limits{MaxTokens: 1001}, ErrWiden},
		{"larger usd budget", Limits{MaxMicroUSD: 5_000_001}, ErrWiden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			child, err := parent.Derive("kid", tt.limits)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			// depth is one less than the parent's.
			if err := Verify(testKey, child, Request{Now: testNow, Depth: 1}, nil); err != nil {
				t.Fatalf("child cannot spawn one level: %v", err)
			}
			if err := Verify(testKey, child, Request{Now: testNow, Depth: 2}, nil); !errors.Is(err, ErrCaveat) {
				t.Fatalf("child can spawn two levels: %v", err)
			}
			if got := child.Lineage(); got[len(got)-1] != "kid" {
				t.Fatalf("lineage %v", got)
			}
		})
	}
	narrow, _ := parent.Derive("kid", tests[1].limits)
	for _, req := range []Request{
		{Now: testNow, Tool: "write"},
		{Now: testNow, Paths: []string{"/ws/b"}},
		{Now: testNow, Host: "b.example"},
		{Now: exp.Add(-30 * time.Second)},
		{Now: testNow, Spend: Spend{Tokens: 501}},
		{Now: testNow, Spend: Spend{MicroUSD: 1_000_001}},
	} {
		if err := Verify(testKey, parent, req, nil); err != nil {
			t.Fatalf("parent rejects %+v: %v", req, err)
		}
		if err := Verify(testKey, narrow, req, nil); !errors.Is(err, ErrCaveat) {
			t.Errorf("narrowed child admits %+v: %v", req, err)
		}
	}
	if err := Verify(testKey, narrow, Request{Now: testNow, Tool: "read", Paths: []string{"/ws/a/x"}, Host: "a.example", Spend: Spend{Tokens: 500, MicroUSD: 1_000_000}}, nil); err != nil {
		t.Errorf("narrowed child rejects an in-scope request: %v", err)
	}
	grandchild, err := narrow.Derive("g", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := grandchild.Derive("gg", Limits{}); !errors.Is(err, ErrDepth) {
		t.Errorf("depth-0 token derived a child: %v", err)
	}
}

func TestVerifyDoesNotAllocate(t *testing.T) {
	tok := benchToken(t)
	ep := NewEpochs()
	req := Request{Tool: "read", Paths: []string{"/ws/src/a.go"}, Now: testNow, Spend: Spend{MicroUSD: 10}}
	if err := Verify(testKey, tok, req, ep); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Verify(testKey, tok, req, ep) }); n != 0 {
		t.Errorf("Verify allocates %.1f times per call", n)
	}
}

func benchToken(tb testing.TB) *Token {
	return mustMint(tb, testKey, ID{Root: "run-0195", Path: []string{"task-7"}, Epoch: 3},
		Tools("read", "write", "bash"), PathPrefixes("/ws/src", "/ws/docs"), ExpiresAt(testNow.Add(time.Hour)), Budget(-1, 5_000_000))
}

// BenchmarkVerify measures Verify of a four-caveat token (tools, paths,
// expiry, budget) with a revocation store: the gateway's per-request check.
func BenchmarkVerify(b *testing.B) {
	tok := benchToken(b)
	ep := NewEpochs()
	req := Request{Tool: "read", Paths: []string{"/ws/src/a.go"}, Now: testNow, Spend: Spend{MicroUSD: 10}}
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify(testKey, tok, req, ep); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeVerify(b *testing.B) {
	text := benchToken(b).String()
	req := Request{Tool: "read", Paths: []string{"/ws/src/a.go"}, Now: testNow}
	b.ReportAllocs()
	for b.Loop() {
		tok, err := Decode(text)
		if err != nil {
			b.Fatal(err)
		}
		if err := Verify(testKey, tok, req, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTooManyCaveatsNeverVerify(t *testing.T) {
	t.Parallel()
	tok := mustMint(t, testKey, testRoot)
	for range MaxCaveats {
		tok = tok.Attenuate(MaxDepth(3))
	}
	if err := Verify(testKey, tok, okRequest, nil); err != nil {
		t.Fatalf("%d caveats: %v", MaxCaveats, err)
	}
	if _, err := Decode(tok.String()); err != nil {
		t.Fatalf("%d caveats do not decode: %v", MaxCaveats, err)
	}
	tok = tok.Attenuate(MaxDepth(3))
	if err := Verify(testKey, tok, okRequest, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("%d caveats: %v", MaxCaveats+1, err)
	}
	if _, err := Decode(tok.String()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("%d caveats decode: %v", MaxCaveats+1, err)
	}
	// A zero Token neither panics nor verifies.
	if err := Verify(testKey, new(Token).Attenuate(Lineage("x")), okRequest, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("zero token: %v", err)
	}
}

// TestConcurrentVerifyAndRevoke exercises Epochs under the race detector:
// verifiers run while revocations land, and once Revoke returns every later
// Verify of the revoked token fails.
func TestConcurrentVerifyAndRevoke(t *testing.T) {
	t.Parallel()
	ep := NewEpochs()
	root := mustMint(t, testKey, ID{Root: "run"}, MaxDepth(1))
	kids := make([]*Token, 8)
	for i := range kids {
		kids[i], _ = root.Derive(fmt.Sprint("k", i), Limits{})
	}
	var wg sync.WaitGroup
	for i := range kids {
		wg.Go(func() {
			for range 200 {
				_ = Verify(testKey, kids[i], okRequest, ep)
			}
		})
	}
	for i := range kids {
		if i%2 == 0 {
			ep.Revoke("run", fmt.Sprint("k", i))
		}
	}
	wg.Wait()
	for i, k := range kids {
		err := Verify(testKey, k, okRequest, ep)
		if revoked := i%2 == 0; revoked != errors.Is(err, ErrRevoked) {
			t.Errorf("kid %d: revoked %v, Verify %v", i, revoked, err)
		}
	}
}

// BenchmarkHMACChainStdlib computes the same five HMAC-SHA256 links with
// crypto/hmac and nothing else: the floor Verify is compared with, since
// absolute times on a shared machine vary.
func BenchmarkHMACChainStdlib(b *testing.B) {
	tok := benchToken(b)
	msgs := [][]byte{tok.idRaw}
	for _, c := range tok.caveats {
		msgs = append(msgs, c.raw)
	}
	b.ReportAllocs()
	for b.Loop() {
		k := testKey
		for _, m := range msgs {
			h := hmac.New(sha256.New, k)
			h.Write(m)
			k = h.Sum(nil)
		}
		if !hmac.Equal(k, tok.sig[:]) {
			b.Fatal("baseline chain differs")
		}
	}
}
