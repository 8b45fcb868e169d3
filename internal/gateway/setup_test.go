package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/llmfake"
	"github.com/apiary-dev/apiary/internal/sched"
)

// A gateway that must substitute virtual keys refuses to start without a
// real key, naming the variable to set.
func TestRequireAPIKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		up   Upstream
		want string
	}{
		{Upstream{Name: "anthropic", URL: "https://api.anthropic.com", Provider: llmapi.Anthropic}, "set ANTHROPIC_API_KEY"},
		{Upstream{Name: "models", URL: "https://api.openai.com"}, "set OPENAI_API_KEY"},
		{Upstream{Name: "x", URL: "http://127.0.0.1:1", APIKeyEnv: "MY_KEY"}, "set MY_KEY"},
		{Upstream{Name: "x", URL: "http://127.0.0.1:1"}, "--upstream-key-env x=VAR"},
	} {
		_, err := New(t.Context(), Config{Upstreams: []Upstream{tc.up}, RequireAPIKeys: true})
		var nk *NoKeyError
		if !errors.As(err, &nk) || !errors.Is(err, ErrNoAPIKey) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want one line with %q", tc.up, err, tc.want)
		}
	}
	ok := []Upstream{{Name: "a", URL: "https://api.anthropic.com", APIKey: "sk-real"}, {Name: "ollama", URL: "http://127.0.0.1:11434", Provider: llmapi.Ollama}}
	if err := CheckAPIKeys(ok); err != nil {
		t.Errorf("with keys: %v", err)
	}
	g, err := New(t.Context(), Config{Upstreams: []Upstream{{Name: "pass", URL: "https://api.anthropic.com"}}})
	if err != nil {
		t.Fatalf("a pass-through gateway needs no key: %v", err)
	}
	g.Close()
}

func TestHasActiveKeys(t *testing.T) {
	t.Parallel()
	db, err := OpenDB(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if has, err := HasActiveKeys(ctx, db); err != nil || has {
		t.Fatalf("empty ledger: %v %v", has, err)
	}
	_, k, err := CreateKey(ctx, db, "agent-1", 0, 0, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if has, err := HasActiveKeys(ctx, db); err != nil || !has {
		t.Fatalf("with a key: %v %v", has, err)
	}
	if err := RevokeKey(ctx, db, k.ID); err != nil {
		t.Fatal(err)
	}
	if has, err := HasActiveKeys(ctx, db); err != nil || has {
		t.Fatalf("revoked: %v %v", has, err)
	}
}

// A 502 the gateway answers itself says what failed, never where: no
// internal address or port reaches the client; the log has them.
func TestBadGatewayBodyIsSanitized(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connection refused
	tg := start(t, Config{Upstreams: []Upstream{{Name: "anthropic", URL: "http://" + addr, Provider: llmapi.Anthropic}},
		MaxAttempts: 2, RetryBase: time.Millisecond, RetryCap: time.Millisecond})
	resp, err := http.Post(tg.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, port, _ := net.SplitHostPort(addr)
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(body), "127.0.0.1") || strings.Contains(string(body), port) ||
		!strings.Contains(string(body), "connection refused") {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
}

// The first retry's backoff is drawn from [0, base], the second from
// [0, 2×base].
func TestRetryDelayFirstBoundIsBase(t *testing.T) {
	t.Parallel()
	base := 100 * time.Millisecond
	g := &Gateway{cfg: Config{MaxAttempts: 10}}
	up := &upstream{backoff: &sched.Backoff{Base: base, Cap: time.Hour, MaxWait: time.Hour}}
	var maxFirst, maxSecond time.Duration
	for range 2000 {
		d, ok := g.retryDelay(&call{up: up, attempts: 1}, 0, 0)
		if !ok {
			t.Fatal("no retry")
		}
		maxFirst = max(maxFirst, d)
		d, _ = g.retryDelay(&call{up: up, attempts: 2}, 0, 0)
		maxSecond = max(maxSecond, d)
	}
	if maxFirst > base || maxFirst < base*9/10 {
		t.Errorf("first retry's delays reach %v, want up to the base %v", maxFirst, base)
	}
	if maxSecond <= base || maxSecond > 2*base {
		t.Errorf("second retry's delays reach %v, want up to %v", maxSecond, 2*base)
	}
}

func TestDefaultLedgerPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/lib/someone")
	if p, err := DefaultLedgerPath(); err != nil || p != "/var/lib/someone/apiary/state.db" {
		t.Errorf("with XDG_STATE_HOME: %q %v", p, err)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/someone")
	if p, err := DefaultLedgerPath(); err != nil || p != "/home/someone/.local/state/apiary/state.db" {
		t.Errorf("with HOME: %q %v", p, err)
	}
}

// A streaming request whose pacing wait exceeds the clients' patience is
// kept alive: the status and ping events come at once, then the real stream.
func TestStreamKeptAliveWhilePaced(t *testing.T) {
	t.Parallel()
	_, url := fake(t, llmfake.Config{Format: llmfake.FormatAnthropic})
	tg := start(t, Config{Upstreams: []Upstream{{Name: "anthropic", URL: url, Provider: llmapi.Anthropic, RPM: 1, Window: 3 * time.Second}},
		ClientPatience: 500 * time.Millisecond, KeepAlive: 100 * time.Millisecond})
	body := `{"model":"claude-sonnet-4-5","max_tokens":20,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	post := func() (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, tg.URL+"/v1/messages", strings.NewReader(body))
		req.Header.Set("X-Api-Key", "k")
		req.Header.Set("Anthropic-Version", "2023-06-01")
		return http.DefaultClient.Do(req)
	}
	first, err := post()
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, first.Body)
	first.Body.Close()
	t0 := time.Now()
	resp, err := post() // the window's one request is spent: this one waits ~3 s
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if d := time.Since(t0); resp.StatusCode != 200 || d > 2*time.Second {
		t.Fatalf("status %d after %v: not kept alive", resp.StatusCode, d)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if time.Since(t0) < 2*time.Second || strings.Count(s, "event: ping") < 5 || !strings.Contains(s, "message_stop") ||
		strings.Index(s, "event: ping") > strings.Index(s, "message_start") {
		t.Fatalf("after %v: %s", time.Since(t0), s)
	}
}
