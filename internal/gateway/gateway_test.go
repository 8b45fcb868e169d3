package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/llmfake"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
)

func anthropicClient(t *testing.T, url string, opts ...aoption.RequestOption) anthropic.Client {
	base := []aoption.RequestOption{aoption.WithBaseURL(url), aoption.WithAPIKey("sk-ant-test"),
		aoption.WithHTTPClient(noKeepAlive(t)), aoption.WithMaxRetries(0)}
	return anthropic.NewClient(append(base, opts...)...)
}

func params() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 256,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello there, write a short answer"))}}
}

func TestAnthropicSDKThroughGateway(t *testing.T) {
	t.Parallel()
	_, up := fake(t, llmfake.Config{Limits: llmfake.Limits{RPM: 1000}})
	g := start(t, Config{Upstreams: []Upstream{{Name: "anthropic", URL: up, Provider: llmapi.Anthropic, MaxConcurrency: 4}}})
	client := anthropicClient(t, g.URL, aoption.WithHeader("X-Apiary-Agent", "alice"))

	var raw *http.Response
	msg, err := client.Messages.New(t.Context(), params(), aoption.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Usage.OutputTokens == 0 || msg.Usage.InputTokens == 0 {
		t.Fatalf("usage %+v", msg.Usage)
	}
	// Rate-limit headers reach the client untouched.
	if raw.Header.Get("anthropic-ratelimit-requests-limit") != "1000" || raw.Header.Get("X-Apiary-Request-Id") == "" {
		t.Errorf("headers %v", raw.Header)
	}

	stream := client.Messages.NewStreaming(t.Context(), params())
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	rows := g.rows(t, 2)
	if len(rows) != 2 {
		t.Fatalf("ledger rows = %d, want 2", len(rows))
	}
	for i, want := range []struct {
		stream bool
		in     int64
		out    int64
	}{{false, msg.Usage.InputTokens, msg.Usage.OutputTokens}, {true, acc.Usage.InputTokens, acc.Usage.OutputTokens}} {
		r := rows[i]
		if r.Agent != "alice" || r.Outcome != "ok" || r.Status != 200 || r.Stream != want.stream || r.Attempts != 1 {
			t.Errorf("row %d = %+v", i, r)
		}
		if r.InputTokens != want.in || r.OutputTokens != want.out || r.Estimated {
			t.Errorf("row %d tokens in/out %d/%d (estimated %v), client saw %d/%d", i, r.InputTokens, r.OutputTokens, r.Estimated, want.in, want.out)
		}
		price, _ := llmapi.DefaultPrices().Cost("claude-sonnet-4-5", llmapi.Usage{InputTokens: want.in, OutputTokens: want.out})
		if r.MicroUSD != int64(price) || r.MicroUSD == 0 {
			t.Errorf("row %d usd_micro %d, want %d", i, r.MicroUSD, price)
		}
	}
}

// TestOpenAIIncludeUsage: a stream without include_usage is metered (the
// gateway injects it) and the client sees exactly the stream it asked for.
func TestOpenAIIncludeUsage(t *testing.T) {
	t.Parallel()
	_, up := fake(t, llmfake.Config{})
	g := start(t, Config{Upstreams: []Upstream{{Name: "openai", URL: up, Provider: llmapi.OpenAI}}})
	body := `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"say something"}]}`
	resp, err := noKeepAlive(t).Post(g.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s := string(raw)
	if !strings.HasSuffix(s, "data: [DONE]\n\n") {
		t.Fatalf("stream does not end with [DONE]: %q", s)
	}
	if strings.Contains(s, `"usage":{`) || strings.Contains(s, `"choices":[]`) {
		t.Errorf("client received the usage chunk it did not ask for: %q", s)
	}
	rows := g.rows(t, 1)
	if len(rows) != 1 || rows[0].OutputTokens == 0 || rows[0].Estimated {
		t.Fatalf("ledger %+v: usage must be metered exactly", rows)
	}

	// A client that asks for usage gets it, untouched.
	client := openai.NewClient(ooption.WithBaseURL(g.URL+"/v1"), ooption.WithAPIKey("sk-test"), ooption.WithHTTPClient(noKeepAlive(t)), ooption.WithMaxRetries(0))
	st := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	var usage int64
	for st.Next() {
		if c := st.Current(); c.Usage.CompletionTokens > 0 {
			usage = c.Usage.CompletionTokens
		}
	}
	if err := st.Err(); err != nil || usage == 0 {
		t.Fatalf("usage chunk %d, err %v", usage, err)
	}
}

// TestTransparentRetry: with half of all upstream answers failing, every
// client request succeeds, and the ledger counts the attempts.
func TestTransparentRetry(t *testing.T) {
	t.Parallel()
	fs, up := fake(t, llmfake.Config{Faults: llmfake.Faults{ErrorRate: 0.3, ResetRate: 0.1, EmptyBodyRate: 0.1}})
	// Half the attempts fail: the breaker would rightly open; this test is
	// about retries, so it is off here (TestBreaker covers it).
	g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic, MaxConcurrency: 4}}, MaxAttempts: 30, NoBreaker: true})
	client := anthropicClient(t, g.URL)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := params()
			if i%2 == 0 {
				stream := client.Messages.NewStreaming(t.Context(), p)
				for stream.Next() {
				}
				if stream.Err() != nil {
					t.Log(stream.Err())
					failed.Add(1)
				}
				return
			}
			if _, err := client.Messages.New(t.Context(), p); err != nil {
				t.Log(err)
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d of 20 requests failed through the gateway", failed.Load())
	}
	st := fs.Stats()
	faults := st.Total.ServerErrors + st.Total.Resets
	if faults == 0 {
		t.Fatal("llmfake injected no faults; the test proves nothing")
	}
	attempts := 0
	for _, r := range g.rows(t, 20) {
		attempts += r.Attempts
	}
	if int64(attempts) != st.Total.Requests {
		t.Errorf("ledger attempts %d != upstream requests %d", attempts, st.Total.Requests)
	}
}

// TestMidStreamCut: an upstream that breaks a stream after the first byte
// reaches the client as an in-stream error, never a clean end.
func TestMidStreamCut(t *testing.T) {
	t.Parallel()
	_, up := fake(t, llmfake.Config{Faults: llmfake.Faults{CutRate: 1, AfterEvents: 3}})
	g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic}}})
	client := anthropicClient(t, g.URL)
	stream := client.Messages.NewStreaming(t.Context(), params())
	n := 0
	for stream.Next() {
		n++
	}
	err := stream.Err()
	if err == nil {
		t.Fatalf("a cut stream ended cleanly after %d events", n)
	}
	if n == 0 {
		t.Errorf("no events before the cut: %v", err)
	}
	if !strings.Contains(err.Error(), "terminal event") {
		t.Errorf("error %v does not explain the cut", err)
	}
	// Every continuation was cut too: after maxResumes of them the stream
	// ends with the error frame.
	rows := g.rows(t, 1)
	if len(rows) != 1 || rows[0].Outcome != "truncated" || rows[0].Attempts != 1+maxResumes {
		t.Errorf("ledger %+v", rows)
	}

	// A non-streaming body cut mid-way is retried (nothing reached the
	// client), so it fails only after every attempt was cut.
	resp, err := noKeepAlive(t).Post(g.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":50,"messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), `"type":"error"`) {
		t.Errorf("status %d body %s", resp.StatusCode, b)
	}
}

// TestBudgetNeverOvershoots: concurrent requests against a small budget
// never spend more than it, and the refused ones never reach the upstream.
func TestBudgetNeverOvershoots(t *testing.T) {
	t.Parallel()
	fs, up := fake(t, llmfake.Config{})
	// Each request reserves (input estimate + 256 max_tokens) at Sonnet
	// prices; allow a handful of them.
	budget := int64(20_000) // $0.02
	g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic}},
		Agents: map[string]AgentPolicy{"bob": {BudgetMicroUSD: budget}}})
	client := anthropicClient(t, g.URL, aoption.WithHeader("X-Apiary-Agent", "bob"))
	var wg sync.WaitGroup
	var ok, refused atomic.Int32
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := client.Messages.New(t.Context(), params())
			var apierr *anthropic.Error
			switch {
			case err == nil:
				ok.Add(1)
			case errors.As(err, &apierr) && apierr.StatusCode == http.StatusPaymentRequired:
				if !strings.Contains(apierr.Error(), "agent bob usd budget $0.020000") {
					t.Errorf("refusal does not name the budget: %v", apierr)
				}
				refused.Add(1)
			default:
				t.Errorf("unexpected error %v", err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("ok %d refused %d: the budget should admit some and refuse others", ok.Load(), refused.Load())
	}
	if got := fs.Stats().Total.Requests; got != int64(ok.Load()) {
		t.Errorf("upstream saw %d requests, %d succeeded: refused requests must not reach it", got, ok.Load())
	}
	var spent int64
	for _, r := range g.rows(t, 40) {
		spent += r.MicroUSD
	}
	if spent > budget {
		t.Errorf("spent %d micro-USD > budget %d", spent, budget)
	}
}

// TestPacingAvoids429: the upstream allows 10 requests per (scaled) window;
// 30 requests from 6 agents all succeed with no client retries, and the
// gateway paces instead of hammering.
func TestPacingAvoids429(t *testing.T) {
	t.Parallel()
	fs, up := fake(t, llmfake.Config{TimeScale: 0.5 / 60, Limits: llmfake.Limits{RPM: 10}}) // 0.5 s windows
	g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic, MaxConcurrency: 5}}})
	var wg sync.WaitGroup
	var failed atomic.Int32
	for a := range 6 {
		client := anthropicClient(t, g.URL, aoption.WithHeader("X-Apiary-Agent", string(rune('a'+a))))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if _, err := client.Messages.New(t.Context(), params()); err != nil {
					t.Log(err)
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d requests failed", failed.Load())
	}
	st := fs.Stats()
	if st.Total.ByStatus["200"] != 30 {
		t.Errorf("upstream 200s = %d", st.Total.ByStatus["200"])
	}
	// The first window is learned from headers; after that, pacing should
	// keep 429s rare.
	if st.Total.RateLimited > 10 {
		t.Errorf("upstream answered %d 429s; the gateway is not pacing", st.Total.RateLimited)
	}
	for key, ks := range st.Keys {
		for _, w := range ks.Windows {
			if w.Requests > 10 {
				t.Errorf("key %s window admitted %d requests > limit 10", key, w.Requests)
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	_, up := fake(t, llmfake.Config{})
	g := start(t, Config{Upstreams: []Upstream{
		{Name: "claude", URL: up, Provider: llmapi.Anthropic},
		{Name: "gpt", URL: up, Provider: llmapi.OpenAI},
	}})
	c := noKeepAlive(t)
	tests := []struct {
		name, method, path, header, body string
		status                           int
		want                             string
	}{
		{"malformed anthropic", "POST", "/v1/messages", "anthropic-version", `{"model":`, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"apiary gateway: malformed request body`},
		{"malformed openai", "POST", "/v1/chat/completions", "", `{not json}`, 400, `"type":"invalid_request_error"`},
		{"unknown route", "POST", "/v9/whatever", "", `{}`, 404, `no upstream serves POST /v9/whatever`},
		{"bad virtual key", "POST", "/v1/messages", "anthropic-version", `{"model":"m","max_tokens":1,"messages":[]}`, 401, `unknown or revoked virtual key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, g.URL+tt.path, strings.NewReader(tt.body))
			if tt.header != "" {
				req.Header.Set(tt.header, "2023-06-01")
			}
			if tt.status == 401 {
				req.Header.Set("X-Api-Key", VirtualKeyPrefix+"doesnotexist")
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.want) {
				t.Errorf("status %d body %s; want %d containing %s", resp.StatusCode, b, tt.status, tt.want)
			}
			if !json.Valid(b) {
				t.Errorf("body is not JSON: %s", b)
			}
		})
	}
}

// TestVirtualKeys: an agent presents a gateway-issued key; the upstream sees
// only the real key, and the key's budget applies.
func TestVirtualKeys(t *testing.T) {
	t.Parallel()
	fs, up := fake(t, llmfake.Config{})
	g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic, APIKey: "sk-real-upstream"}}})
	secret, key, err := CreateKey(t.Context(), g.DB, "carol", 1, 0, 3, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, VirtualKeyPrefix) {
		t.Fatalf("secret %q", secret)
	}
	client := anthropicClient(t, g.URL, aoption.WithAPIKey(secret))
	// A 1 micro-USD budget refuses every request before it is sent.
	_, err = client.Messages.New(t.Context(), params())
	var apierr *anthropic.Error
	if !errors.As(err, &apierr) || apierr.StatusCode != 402 || !strings.Contains(err.Error(), "key "+key.ID) {
		t.Fatalf("err = %v, want a 402 naming the key's budget", err)
	}
	secret2, _, err := CreateKey(t.Context(), g.DB, "dave", 0, 0, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	client2 := anthropicClient(t, g.URL, aoption.WithAPIKey(secret2))
	if _, err := client2.Messages.New(t.Context(), params()); err != nil {
		t.Fatal(err)
	}
	st := fs.Stats()
	if _, ok := st.Keys["sk-real-upstream"]; !ok || len(st.Keys) != 1 {
		t.Errorf("upstream keys %v: only the real key may reach the upstream", keysOf(st.Keys))
	}
	rows := g.rows(t, 2)
	if rows[1].Agent != "dave" || !strings.HasPrefix(rows[1].KeyID, "vk_") {
		t.Errorf("row %+v", rows[1])
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestResumeCutStream: Anthropic text streams that the upstream cuts after
// the first byte are continued with a prefill request and reach the client
// as one well-formed message; with resumption off they end in an error.
func TestResumeCutStream(t *testing.T) {
	t.Parallel()
	for _, off := range []bool{false, true} {
		fs, up := fake(t, llmfake.Config{Faults: llmfake.Faults{CutRate: 0.3}, Output: llmfake.Output{TokensMean: 60, ChunkTokens: 4}})
		g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic}}, NoResume: off})
		client := anthropicClient(t, g.URL)
		failed := 0
		for range 12 {
			stream := client.Messages.NewStreaming(t.Context(), params())
			var msg anthropic.Message
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					t.Fatalf("resume=%v: accumulate: %v", !off, err)
				}
			}
			if stream.Err() != nil {
				failed++
				continue
			}
			// A cut after a block ended continues in a new text block.
			if msg.StopReason != anthropic.StopReasonEndTurn || len(msg.Content) == 0 || msg.Usage.OutputTokens == 0 {
				t.Errorf("resume=%v: stop %s, %d blocks, usage %+v", !off, msg.StopReason, len(msg.Content), msg.Usage)
			}
			for _, b := range msg.Content {
				if b.Type != "text" || b.Text == "" {
					t.Errorf("resume=%v: block %s %q", !off, b.Type, b.Text)
				}
			}
		}
		cuts := fs.Stats().Total.Cuts
		if cuts == 0 {
			t.Fatal("no stream was cut; the test proves nothing")
		}
		switch {
		case !off && failed > 0:
			// A stream fails only if the original and both continuations
			// were cut (p = 0.027 each); requests are sequential and
			// llmfake is seeded, so with this seed none is.
			t.Errorf("resumption on: %d of 12 streams failed (%d cuts)", failed, cuts)
		case off && failed == 0:
			t.Errorf("resumption off: no stream failed despite %d cuts", cuts)
		}
		if !off {
			resumed := 0
			for _, r := range g.rows(t, 12) {
				if r.Outcome == "resumed" {
					resumed++
					if r.Attempts < 2 || r.OutputTokens == 0 {
						t.Errorf("resumed row %+v", r)
					}
				}
			}
			if resumed == 0 {
				t.Error("no ledger row says resumed")
			}
		}
	}
}
