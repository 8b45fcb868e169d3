package llmapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// claudeCodeBody builds an Anthropic request of about size bytes shaped like
// Claude Code's: a long cached system prompt, tool definitions and a
// conversation with tool calls and file contents in tool results.
func claudeCodeBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"claude-sonnet-4-5-20250929","max_tokens":32000,"stream":true,"metadata":{"user_id":"user_4f1c_account_a1b2_session_9c1e"},`)
	b.WriteString(`"system":[{"type":"text","text":"You are Claude Code, Anthropic's official CLI for Claude.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"`)
	b.WriteString(strings.Repeat(`Follow the repository conventions; keep changes small and tested. `, size/4/66))
	b.WriteString(`"}],"tools":[`)
	for i := range 8 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"Tool%d","description":"%s","input_schema":{"type":"object","properties":{"path":{"type":"string","description":"absolute path"},"limit":{"type":"number"}},"required":["path"]}}`,
			i, strings.Repeat("Reads or edits a file; returns its output. ", 6))
	}
	b.WriteString(`],"messages":[`)
	source := strings.Repeat(`func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {\n\tif r.Method != http.MethodPost {\n\t\thttp.Error(w, \"method\", 405)\n\t}\n}\n`, 8)
	for i := 0; b.Len() < size-1500; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":[{"type":"text","text":"Step %d: please read the file and fix the failing test in pkg/server/handler_test.go."}]},`, i)
		fmt.Fprintf(&b, `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_%04d","name":"Read","input":{"file_path":"/src/pkg/server/handler.go"}}]},`, i)
		fmt.Fprintf(&b, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%04d","content":"%s"}]}`, i, source)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkInspectRequest reads a 20 KB Claude Code request; the
// encoding_json_valid case, which only validates the same body with the
// standard library, is the baseline to compare with in the same run.
func BenchmarkInspectRequest(b *testing.B) {
	body := claudeCodeBody(20 << 10)
	if _, err := InspectRequest(Anthropic, "/v1/messages", nil, body); err != nil {
		b.Fatal(err)
	}
	b.Run("llmapi", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := InspectRequest(Anthropic, "/v1/messages", nil, body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json_valid", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if !json.Valid(body) {
				b.Fatal("invalid")
			}
		}
	})
}

func BenchmarkInjectIncludeUsage(b *testing.B) {
	body := []byte(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("x", 4000) + `"}]}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := InjectIncludeUsage(body); err != nil {
			b.Fatal(err)
		}
	}
}

// anthropicStream200 is a 200-event Anthropic stream: message_start, one
// text block of 194 deltas, pings, message_delta and message_stop.
func anthropicStream200() []byte {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5-20250929\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":2679,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":18000,\"output_tokens\":3}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	b.WriteString("event: ping\ndata: {\"type\": \"ping\"}\n\n")
	for range 194 {
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" the quick brown fox\"}}\n\n")
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":980}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return []byte(b.String())
}

func BenchmarkStreamMeter(b *testing.B) {
	stream := anthropicStream200()
	var reads [][]byte // as a proxy reads it: 4 KiB at a time
	for rest := stream; len(rest) > 0; {
		n := min(len(rest), 4096)
		reads = append(reads, rest[:n])
		rest = rest[n:]
	}
	if res := meter(anthropicInfo, []string{string(stream)}, true); res.Events != 200 || res.Outcome != OutcomeComplete {
		b.Fatalf("fixture: %+v", res)
	}
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		m := NewStreamMeter(anthropicInfo)
		for _, r := range reads {
			m.Feed(r)
		}
		if m.Finish(true).Outcome != OutcomeComplete {
			b.Fatal("not complete")
		}
	}
}

func BenchmarkParseRateLimits(b *testing.B) {
	cases := []struct {
		name string
		p    Provider
		kv   []string
	}{
		{"anthropic", Anthropic, []string{
			"anthropic-ratelimit-requests-limit", "1000", "anthropic-ratelimit-requests-remaining", "999", "anthropic-ratelimit-requests-reset", "2025-08-21T12:40:59Z",
			"anthropic-ratelimit-tokens-limit", "96000", "anthropic-ratelimit-tokens-remaining", "95000", "anthropic-ratelimit-tokens-reset", "2025-08-21T12:40:59Z",
			"anthropic-ratelimit-input-tokens-limit", "80000", "anthropic-ratelimit-input-tokens-remaining", "79000", "anthropic-ratelimit-input-tokens-reset", "2025-08-21T12:40:59Z",
			"anthropic-ratelimit-output-tokens-limit", "16000", "anthropic-ratelimit-output-tokens-remaining", "16000", "anthropic-ratelimit-output-tokens-reset", "2025-08-21T12:40:00Z",
			"request-id", "req_011CSHoEeqs5C35K2UUqR7Fy", "content-type", "application/json"}},
		{"openai", OpenAI, []string{
			"x-ratelimit-limit-requests", "60", "x-ratelimit-limit-tokens", "150000",
			"x-ratelimit-remaining-requests", "59", "x-ratelimit-remaining-tokens", "149984",
			"x-ratelimit-reset-requests", "1s", "x-ratelimit-reset-tokens", "6m0s", "x-request-id", "req_1"}},
	}
	for _, c := range cases {
		h := hdr(c.kv...)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !ParseRateLimits(c.p, h, testNow).Requests.Known {
					b.Fatal("not parsed")
				}
			}
		})
	}
}

func BenchmarkClassify(b *testing.B) {
	h := hdr("retry-after", "30")
	body := []byte(anthropicRateLimitBody)
	b.ReportAllocs()
	for b.Loop() {
		if Classify(Anthropic, 429, h, body, testNow).Class != ClassRateLimit {
			b.Fatal("misclassified")
		}
	}
}

func BenchmarkCost(b *testing.B) {
	pt := DefaultPrices()
	u := Usage{InputTokens: 10, OutputTokens: 500, CacheCreationInputTokens: 3000, CacheCreation1h: 2000, CacheReadInputTokens: 20000}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := pt.Cost("claude-sonnet-4-5-20250929", u); !ok {
			b.Fatal("no price")
		}
	}
}
