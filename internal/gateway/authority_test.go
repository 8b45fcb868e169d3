package gateway

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

var authKey = []byte("0123456789abcdef0123456789abcdef")

func authToken(t testing.TB, path []string, caveats ...capability.Caveat) *capability.Token {
	t.Helper()
	tok, err := capability.Mint(authKey, capability.ID{Root: "run", Path: path}, caveats...)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

const authBody = `{"model":"claude-sonnet-4-5","max_tokens":50,"messages":[{"role":"user","content":"x"}]}`

func authCall(t testing.TB, ctx context.Context, url, key, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", strings.NewReader(authBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	if token != "" {
		req.Header.Set(HeaderCapability, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAuthorityVerifiesEveryRequest: the gateway forwards a request only
// when the presented capability (header or bound virtual key) allows tool
// "model", the upstream's host, the time and the key's spend; a revoked
// token is refused on its next request.
func TestAuthorityVerifiesEveryRequest(t *testing.T) {
	t.Parallel()
	_, upURL := fake(t, llmfake.Config{})
	host := mustHost(t, upURL)
	rev := capability.NewEpochs()
	auth, err := NewAuthority(authKey, rev, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth.Required = true
	g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: upURL, APIKey: "real"}}, Authority: auth})
	secret, vk, err := CreateKey(t.Context(), g.DB, "worker", 0, 100, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	good := authToken(t, []string{"t1"}, capability.Tools("model"), capability.Hosts(host), capability.ExpiresAt(now.Add(time.Hour)))
	tests := []struct {
		name   string
		key    string
		token  string
		status int
		want   string
	}{
		{"header", "", good.String(), 200, ""},
		{"none", "", "", 403, "no capability presented"},
		{"tool not granted", "", authToken(t, []string{"t2"}, capability.Tools("rw.read")).String(), 403, `tool \"model\" not allowed`},
		{"other host", "", authToken(t, []string{"t3"}, capability.Hosts("api.example.com")).String(), 403, "not allowed"},
		{"no network", "", authToken(t, []string{"t3"}, capability.NoNetwork()).String(), 403, "not allowed"},
		{"expired", "", authToken(t, []string{"t4"}, capability.ExpiresAt(now.Add(-time.Minute))).String(), 403, "expired"},
		{"forged", "", "apcap." + strings.Repeat("A", 60), 403, "malformed"},
		{"budget below one request", secret, authToken(t, []string{"t5"}, capability.Budget(10, -1)).String(), 403, "exceeds 10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := authCall(t, t.Context(), g.URL, tc.key, tc.token)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("status %d body %s; want %d %q", status, body, tc.status, tc.want)
			}
		})
	}
	// A bound virtual key carries its token.
	if err := auth.Bind(vk.ID, good.String()); err != nil {
		t.Fatal(err)
	}
	if status, body := authCall(t, t.Context(), g.URL, secret, ""); status != 200 {
		t.Errorf("bound key: %d %s", status, body)
	}
	rev.Revoke("run", "t1")
	if status, body := authCall(t, t.Context(), g.URL, "", good.String()); status != 403 || !strings.Contains(body, "revoked") {
		t.Errorf("revoked: %d %s", status, body)
	}
}

// TestAuthorityAbortsInFlight: revoking a task aborts its request in
// flight, upstream too (the model server sees it end), and the agent gets a
// typed 403; another task's request is untouched.
func TestAuthorityAbortsInFlight(t *testing.T) {
	t.Parallel()
	srv, upURL := fake(t, llmfake.Config{Faults: llmfake.Faults{Latency: time.Minute}})
	auth, _ := NewAuthority(authKey, nil, nil)
	g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: upURL, APIKey: "real"}}, Authority: auth, NoRetry: true})
	victim := authToken(t, []string{"task", "a1"})
	other := authToken(t, []string{"other", "a1"})
	type res struct {
		status int
		body   string
	}
	done := make(chan res, 1)
	go func() {
		s, b := authCall(t, context.Background(), g.URL, "", victim.String())
		done <- res{s, b}
	}()
	otherCtx, stopOther := context.WithCancel(t.Context())
	defer stopOther()
	otherDone := make(chan struct{})
	go func() {
		defer close(otherDone)
		req, _ := http.NewRequestWithContext(otherCtx, http.MethodPost, g.URL+"/v1/messages", strings.NewReader(authBody))
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set(HeaderCapability, other.String())
		if resp, err := http.DefaultClient.Do(req); err == nil { // ends when the test stops waiting
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for auth.InFlight() < 2 || srv.Stats().InFlight < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("requests never reached the upstream: %d tracked, %d upstream", auth.InFlight(), srv.Stats().InFlight)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := auth.Abort([]string{"run", "task"}, ""); n != 1 {
		t.Fatalf("aborted %d requests, want 1", n)
	}
	r := <-done
	if r.status != http.StatusForbidden || !strings.Contains(r.body, "permission_error") || !strings.Contains(r.body, "revoked") {
		t.Errorf("aborted request: %d %s", r.status, r.body)
	}
	for time.Now().Before(deadline) && srv.Stats().InFlight != 1 {
		time.Sleep(5 * time.Millisecond)
	}
	if n := srv.Stats().InFlight; n != 1 {
		t.Errorf("upstream still has %d requests in flight, want only the other task's", n)
	}
	stopOther()
	<-otherDone
	if auth.Abort(nil, "") != 0 {
		t.Error("Abort with nothing named cancelled something")
	}
}

func mustHost(t testing.TB, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// FuzzAuthorityHeader: a capability header that is any mutation of a valid
// token never gets a request through.
func FuzzAuthorityHeader(f *testing.F) {
	good := authToken(f, []string{"t"}, capability.Tools("model"))
	text := good.String()
	f.Add(0, byte(1))
	f.Add(len(text)/2, byte(0x20))
	f.Add(len(text)-1, byte(7))
	auth, err := NewAuthority(authKey, nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	g := &Gateway{cfg: Config{Authority: auth}, budgets: &budgets{agents: map[string]*account{}, keys: map[string]*account{}}}
	up := &upstream{url: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}}
	f.Fuzz(func(t *testing.T, pos int, flip byte) {
		if pos < 0 || flip == 0 {
			return
		}
		b := []byte(text)
		b[pos%len(b)] ^= flip
		r, _ := http.NewRequest(http.MethodPost, "http://gw/v1/messages", nil)
		r.Header.Set(HeaderCapability, string(b))
		if _, done, err := g.authorize(r, &identity{agent: "a"}, up); err == nil {
			done()
			if strings.TrimSpace(string(b)) != text {
				t.Fatalf("mutated header %q was accepted", b)
			}
		}
	})
}
