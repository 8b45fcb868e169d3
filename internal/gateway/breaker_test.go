package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

func post(t *testing.T, c *http.Client, url, body string) (int, string, http.Header) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b), resp.Header
}

const smallBody = `{"model":"claude-sonnet-4-5","max_tokens":32,"messages":[{"role":"user","content":"hello"}]}`

// TestBreakerFailFast: an upstream that fails every request trips the
// breaker; while open, requests are answered at once without reaching the
// upstream; when the upstream recovers, a probe closes it again.
func TestBreakerFailFast(t *testing.T) {
	t.Parallel()
	fs, up := fake(t, llmfake.Config{Faults: llmfake.Faults{ErrorRate: 1, ErrorStatuses: []int{500}}})
	g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic}},
		NoRetry: true, BreakerFailFast: true, BreakerMin: 5, BreakerOpenFor: 200 * time.Millisecond, BreakerWindow: 10 * time.Second})
	c := noKeepAlive(t)
	for range 5 {
		if st, _, _ := post(t, c, g.URL+"/v1/messages", smallBody); st != 500 {
			t.Fatalf("status %d, want the upstream's 500 passed through", st)
		}
	}
	before := fs.Stats().Total.Requests
	st, body, h := post(t, c, g.URL+"/v1/messages", smallBody)
	if st != 529 || !strings.Contains(body, "circuit breaker for upstream a is open") || h.Get("Retry-After") == "" {
		t.Fatalf("open breaker answered %d %s (retry-after %q)", st, body, h.Get("Retry-After"))
	}
	if fs.Stats().Total.Requests != before {
		t.Fatal("a request reached the upstream while the breaker was open")
	}
	// The upstream recovers; after the open interval one probe closes it.
	cfg := fs.Config()
	cfg.Faults = llmfake.Faults{}
	if err := fs.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond)
	for i := range 3 {
		if st, body, _ := post(t, c, g.URL+"/v1/messages", smallBody); st != 200 {
			t.Fatalf("request %d after recovery: %d %s", i, st, body)
		}
	}
	if s := g.Stats().Upstreams[0].Breaker; s != "closed" {
		t.Errorf("breaker %s after recovery", s)
	}
}

// TestBreakerWaits: without fail-fast, requests wait out the open breaker and
// succeed once the upstream is healthy.
func TestBreakerWaits(t *testing.T) {
	t.Parallel()
	fs, up := fake(t, llmfake.Config{Faults: llmfake.Faults{ErrorRate: 1, ErrorStatuses: []int{503}}})
	g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic}},
		MaxAttempts: 50, BreakerMin: 4, BreakerOpenFor: 100 * time.Millisecond})
	go func() {
		time.Sleep(300 * time.Millisecond)
		cfg := fs.Config()
		cfg.Faults = llmfake.Faults{}
		_ = fs.SetConfig(cfg)
	}()
	st, body, _ := post(t, noKeepAlive(t), g.URL+"/v1/messages", smallBody)
	if st != 200 {
		t.Fatalf("status %d %s", st, body)
	}
	rows := g.rows(t, 1)
	if rows[0].Attempts < 2 {
		t.Errorf("attempts %d", rows[0].Attempts)
	}
}

// TestStreamingFramings: Ollama's NDJSON (streaming by default) and Gemini's
// SSE are streamed, not buffered, and metered.
func TestStreamingFramings(t *testing.T) {
	t.Parallel()
	const delay = 50 * time.Millisecond
	_, up := fake(t, llmfake.Config{Faults: llmfake.Faults{EventDelay: delay}})
	g := start(t, Config{Upstreams: []Upstream{{Name: "ollama", URL: up, Provider: llmapi.Ollama}, {Name: "gemini", URL: up, Provider: llmapi.Gemini}}})
	c := noKeepAlive(t)
	for _, tt := range []struct{ path, body string }{
		{"/ollama/api/chat", `{"model":"llama3","messages":[{"role":"user","content":"hi"}]}`},
		{"/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", `{"contents":[{"parts":[{"text":"hi"}]}]}`},
	} {
		start := time.Now()
		resp, err := c.Post(g.URL+tt.path, "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatal(err)
		}
		first := time.Since(start)
		rest, _ := io.ReadAll(resp.Body)
		total := time.Since(start)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tt.path, resp.StatusCode, rest)
		}
		// Events are delay apart: a buffering proxy would deliver the first
		// byte only with the last, a streaming one at least one delay
		// before it.
		if total-first < delay {
			t.Errorf("%s: first byte at %v, end at %v: the stream was buffered", tt.path, first, total)
		}
	}
	for _, r := range g.rows(t, 2) {
		if r.OutputTokens == 0 || r.Estimated || r.Outcome != "ok" || !r.Stream {
			t.Errorf("row %+v", r)
		}
	}
}
