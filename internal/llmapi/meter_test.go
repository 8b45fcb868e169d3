package llmapi

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

type meterCase struct {
	name   string
	info   RequestInfo
	stream string
	eof    bool
	want   StreamResult
}

var (
	anthropicInfo  = RequestInfo{Provider: Anthropic, Endpoint: EndpointMessages, Stream: true, Framing: FramingSSE, InputEstimate: 300}
	chatInfo       = RequestInfo{Provider: OpenAI, Endpoint: EndpointChat, Stream: true, Framing: FramingSSE, InputEstimate: 300}
	azureInfo      = RequestInfo{Provider: Azure, Endpoint: EndpointChat, Stream: true, Framing: FramingSSE, InputEstimate: 300}
	responsesInfo  = RequestInfo{Provider: OpenAI, Endpoint: EndpointResponses, Stream: true, Framing: FramingSSE, InputEstimate: 300}
	geminiSSEInfo  = RequestInfo{Provider: Gemini, Endpoint: EndpointStreamGenerate, Stream: true, Framing: FramingSSE, InputEstimate: 300}
	geminiArrInfo  = RequestInfo{Provider: Gemini, Endpoint: EndpointStreamGenerate, Stream: true, Framing: FramingJSONArray, InputEstimate: 300}
	ollamaChatInfo = RequestInfo{Provider: Ollama, Endpoint: EndpointOllamaChat, Stream: true, Framing: FramingNDJSON, InputEstimate: 300}
	ollamaGenInfo  = RequestInfo{Provider: Ollama, Endpoint: EndpointOllamaGenerate, Stream: true, Framing: FramingNDJSON, InputEstimate: 300}
)

// cut returns s up to (not including) the first occurrence of marker.
func cut(s, marker string) string {
	i := strings.Index(s, marker)
	if i < 0 {
		panic("marker not found: " + marker)
	}
	return s[:i]
}

var geminiFinal = Usage{InputTokens: 1520 - 1024 + 8, CacheReadInputTokens: 1024, OutputTokens: 242, ReasoningTokens: 200}

var meterCases = []meterCase{
	{"anthropic web search: latest cumulative values", anthropicInfo, anthropicWebSearchStream, true, StreamResult{
		Outcome: OutcomeComplete, Model: "claude-sonnet-4-5-20250929", Events: 15,
		Usage: Usage{InputTokens: 9135, OutputTokens: 512, CacheCreationInputTokens: 1200, CacheCreation5m: 200, CacheCreation1h: 1000, CacheReadInputTokens: 4500},
	}},
	{"anthropic thinking", anthropicInfo, anthropicThinkingStream, true, StreamResult{
		Outcome: OutcomeComplete, Model: "claude-opus-4-1-20250805", Events: 10, Usage: Usage{InputTokens: 25, OutputTokens: 15},
	}},
	{"anthropic complete even if the read failed after message_stop", anthropicInfo, anthropicThinkingStream, false, StreamResult{
		Outcome: OutcomeComplete, Model: "claude-opus-4-1-20250805", Events: 10, Usage: Usage{InputTokens: 25, OutputTokens: 15},
	}},
	{"anthropic cut after a message_delta", anthropicInfo, cut(anthropicWebSearchStream, "event: ping\ndata: {\"type\": \"ping\"}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2"), true, StreamResult{
		Outcome: OutcomeTruncated, Model: "claude-sonnet-4-5-20250929", Events: 9,
		Usage: Usage{InputTokens: 5012, OutputTokens: 120, CacheCreationInputTokens: 1200, CacheCreation5m: 200, CacheCreation1h: 1000, CacheReadInputTokens: 3000, Estimated: true},
	}},
	{"anthropic cut mid-event", anthropicInfo, cut(anthropicThinkingStream, `"Hello!"}}`), true, StreamResult{
		Outcome: OutcomeTruncated, Model: "claude-opus-4-1-20250805", Events: 6,
		// 32 bytes of thinking → 8 output tokens estimated; the signature is not text.
		Usage: Usage{InputTokens: 25, OutputTokens: 8, Estimated: true},
	}},
	{"anthropic error event", anthropicInfo, anthropicErrorStream, true, StreamResult{
		Outcome: OutcomeErrored, Model: "claude-haiku-4-5", Events: 4, ErrorType: "overloaded_error", ErrorMessage: "Overloaded",
		Usage: Usage{InputTokens: 40, OutputTokens: 4, Estimated: true},
	}},
	{"openai with usage chunk", chatInfo, openAIStreamWithUsage, true, StreamResult{
		Outcome: OutcomeComplete, Model: "gpt-4o-2024-08-06", Events: 6,
		Usage: Usage{InputTokens: 93, CacheReadInputTokens: 1024, OutputTokens: 46, ReasoningTokens: 12},
	}},
	{"openai without usage chunk is estimated", chatInfo, openAIStreamWithoutUsage, true, StreamResult{
		Outcome: OutcomeComplete, Model: "gpt-4o-2024-08-06", Events: 5,
		Usage: Usage{InputTokens: 300, OutputTokens: 8, Estimated: true}, // 31 bytes of content
	}},
	{"openai without [DONE] is truncated", chatInfo, openAIChatBody, true, StreamResult{
		Outcome: OutcomeTruncated, Model: "gpt-4o-2024-08-06", Events: 4,
		Usage: Usage{InputTokens: 300, OutputTokens: 8, Estimated: true},
	}},
	{"openai error chunk", chatInfo, openAIErrorStream, true, StreamResult{
		Outcome: OutcomeErrored, Model: "gpt-4o-2024-08-06", Events: 2, ErrorType: "server_error",
		ErrorMessage: "The server had an error while processing your request.",
		Usage:        Usage{InputTokens: 300, OutputTokens: 2, Estimated: true},
	}},
	{"azure prompt filter chunk is not usage", azureInfo, azureStream, true, StreamResult{
		Outcome: OutcomeComplete, Model: "gpt-4o-2024-08-06", Events: 4,
		Usage: Usage{InputTokens: 93, CacheReadInputTokens: 1024, OutputTokens: 46, ReasoningTokens: 12},
	}},
	{"responses completed", responsesInfo, responsesStream, true, StreamResult{
		Outcome: OutcomeComplete, Model: "gpt-4.1-2025-04-14", Events: 10,
		Usage: Usage{InputTokens: 117, CacheReadInputTokens: 1920, OutputTokens: 311, ReasoningTokens: 256},
	}},
	{"responses without terminal event", responsesInfo, cut(responsesStream, "event: response.completed"), true, StreamResult{
		Outcome: OutcomeTruncated, Model: "gpt-4.1-2025-04-14", Events: 9,
		Usage: Usage{InputTokens: 300, OutputTokens: 7, Estimated: true}, // 25 bytes of deltas
	}},
	{"responses failed", responsesInfo, responsesFailedStream, true, StreamResult{
		Outcome: OutcomeErrored, Model: "o3", Events: 3, ErrorType: "server_error", ErrorMessage: "The model failed to generate a response.",
		Usage: Usage{InputTokens: 300, OutputTokens: 2, Estimated: true},
	}},
	{"responses error event", responsesInfo, responsesErrorEventStream, true, StreamResult{
		Outcome: OutcomeErrored, Model: "o3", Events: 2, ErrorType: "ERR_SOMETHING", ErrorMessage: "Something went wrong",
		Usage: Usage{InputTokens: 300, Estimated: true},
	}},
	{"gemini sse with usage-only chunk", geminiSSEInfo, geminiSSEStream, true, StreamResult{
		Outcome: OutcomeComplete, Model: "gemini-3-pro-preview", Events: 3, Usage: geminiFinal,
	}},
	{"gemini sse cut by a read error", geminiSSEInfo, geminiSSEStream, false, StreamResult{
		Outcome: OutcomeTruncated, Model: "gemini-3-pro-preview", Events: 3, Usage: geminiFinal,
	}},
	{"gemini sse without finishReason", geminiSSEInfo, "data: " + gemini1 + "\n\n", true, StreamResult{
		Outcome: OutcomeTruncated, Model: "gemini-3-pro-preview", Events: 1,
		Usage: Usage{InputTokens: 1520, OutputTokens: 3, Estimated: true},
	}},
	{"gemini json array", geminiArrInfo, geminiArrayStream, true, StreamResult{
		Outcome: OutcomeComplete, Model: "gemini-3-pro-preview", Events: 3, Usage: geminiFinal,
	}},
	{"gemini json array without closing bracket", geminiArrInfo, strings.TrimSuffix(geminiArrayStream, "]"), true, StreamResult{
		Outcome: OutcomeTruncated, Model: "gemini-3-pro-preview", Events: 3, Usage: geminiFinal,
	}},
	{"gemini json array error element", geminiArrInfo, geminiArrayError, true, StreamResult{
		Outcome: OutcomeErrored, Model: "gemini-3-pro-preview", Events: 2, ErrorType: "UNAVAILABLE",
		ErrorMessage: "The model is overloaded. Please try again later.",
		Usage:        Usage{InputTokens: 1520, OutputTokens: 3, Estimated: true},
	}},
	{"ollama chat", ollamaChatInfo, ollamaChatStream, true, StreamResult{
		Outcome: OutcomeComplete, Model: "llama3.2", Events: 3, Usage: Usage{InputTokens: 26, OutputTokens: 282},
	}},
	{"ollama generate without final newline", ollamaGenInfo, ollamaGenerateStream, true, StreamResult{
		Outcome: OutcomeComplete, Model: "qwen2.5-coder:7b", Events: 3, Usage: Usage{InputTokens: 13, OutputTokens: 7},
	}},
	{"ollama generate cut before the done line ended", ollamaGenInfo, ollamaGenerateStream, false, StreamResult{
		Outcome: OutcomeTruncated, Model: "qwen2.5-coder:7b", Events: 2, Usage: Usage{InputTokens: 300, OutputTokens: 4, Estimated: true},
	}},
	{"ollama error line", ollamaChatInfo, ollamaErrorStream, true, StreamResult{
		Outcome: OutcomeErrored, Model: "llama3.2", Events: 2,
		ErrorMessage: "an error was encountered while running the model: unexpected EOF",
		Usage:        Usage{InputTokens: 300, OutputTokens: 1, Estimated: true},
	}},
	{"empty stream", anthropicInfo, "", true, StreamResult{Usage: Usage{InputTokens: 300, Estimated: true}}},
	{"garbage events are skipped", chatInfo, "data: {not json\n\n: comment\n\nevent: weird\ndata: [1,2]\n\n" + openAIUsageChunk + "data: [DONE]\n\n", true, StreamResult{
		Outcome: OutcomeComplete, Model: "gpt-4o-2024-08-06", Events: 4,
		Usage: Usage{InputTokens: 93, CacheReadInputTokens: 1024, OutputTokens: 46, ReasoningTokens: 12},
	}},
	{"anthropic json body", RequestInfo{Provider: Anthropic, Endpoint: EndpointMessages, InputEstimate: 300},
		`{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":6}}`,
		true, StreamResult{Outcome: OutcomeComplete, Model: "claude-haiku-4-5-20251001", Events: 1, Usage: Usage{InputTokens: 12, OutputTokens: 6}}},
	{"json error body", RequestInfo{Provider: Anthropic, Endpoint: EndpointMessages},
		`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"},"request_id":"req_1"}`,
		true, StreamResult{Outcome: OutcomeErrored, Events: 1, ErrorType: "invalid_request_error", ErrorMessage: "max_tokens: Field required", Usage: Usage{Estimated: true}}},
	{"json body cut", RequestInfo{Provider: OpenAI, Endpoint: EndpointChat, InputEstimate: 5},
		`{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-5","choices":[{"index":0,"message":{"role":"assistant","content":"Hel`,
		false, StreamResult{Events: 1, Model: "gpt-5", Usage: Usage{InputTokens: 5, Estimated: true}}},
}

func meter(info RequestInfo, chunks []string, eof bool) StreamResult {
	m := NewStreamMeter(info)
	for _, c := range chunks {
		m.Feed([]byte(c))
	}
	return m.Finish(eof)
}

func TestStreamMeter(t *testing.T) {
	t.Parallel()
	for _, tt := range meterCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := meter(tt.info, []string{tt.stream}, tt.eof)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestStreamMeterSplitInvariance feeds every stream split at every byte
// boundary, byte by byte, and in random pieces: the result never changes.
// SSE streams must also give the same result with CRLF line ends.
func TestStreamMeterSplitInvariance(t *testing.T) {
	t.Parallel()
	for _, tt := range meterCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := meter(tt.info, []string{tt.stream}, tt.eof)
			s := tt.stream
			for i := 0; i <= len(s); i++ {
				if got := meter(tt.info, []string{s[:i], s[i:]}, tt.eof); !reflect.DeepEqual(got, want) {
					t.Fatalf("split at %d: got %+v, want %+v", i, got, want)
				}
			}
			bytewise := make([]string, len(s))
			for i := range s {
				bytewise[i] = s[i : i+1]
			}
			if got := meter(tt.info, bytewise, tt.eof); !reflect.DeepEqual(got, want) {
				t.Fatalf("byte by byte: got %+v, want %+v", got, want)
			}
			rng := rand.New(rand.NewPCG(1, uint64(len(s))))
			for range 20 {
				if got := meter(tt.info, randomSplit(rng, s), tt.eof); !reflect.DeepEqual(got, want) {
					t.Fatalf("random split: got %+v, want %+v", got, want)
				}
			}
			if tt.info.Framing == FramingSSE && !strings.Contains(s, "\r") {
				crlf := strings.ReplaceAll(s, "\n", "\r\n")
				if got := meter(tt.info, randomSplit(rng, crlf), tt.eof); !reflect.DeepEqual(got, want) {
					t.Fatalf("CRLF: got %+v, want %+v", got, want)
				}
			}
		})
	}
}

func randomSplit(rng *rand.Rand, s string) []string {
	var parts []string
	for len(s) > 0 {
		n := 1 + rng.IntN(min(len(s), 64))
		parts = append(parts, s[:n])
		s = s[n:]
	}
	return parts
}

func TestStreamMeterFramingError(t *testing.T) {
	t.Parallel()
	m := NewStreamMeter(geminiArrInfo)
	m.Feed([]byte("<html>502 Bad Gateway</html>"))
	res := m.Finish(true)
	if res.Err == nil || res.Outcome != OutcomeTruncated {
		t.Errorf("got %+v, want a framing error and a truncated outcome", res)
	}
}

func TestStreamMeterLargeJSONBody(t *testing.T) {
	t.Parallel()
	// An embeddings response far over maxJSONBody: the usage at its end is
	// still found, from the kept tail.
	var b strings.Builder
	b.WriteString(`{"object":"list","data":[`)
	for i := range 20000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"object":"embedding","index":0,"embedding":[0.0023064255,-0.009327292,0.015797347]}`)
	}
	b.WriteString(`],"model":"text-embedding-3-small","usage": {"prompt_tokens":8000,"total_tokens":8000}}`)
	body := b.String()
	info := RequestInfo{Provider: OpenAI, Endpoint: EndpointEmbeddings}
	res := meter(info, randomSplit(rand.New(rand.NewPCG(2, 2)), body), true)
	want := Usage{InputTokens: 8000}
	if res.Usage != want || res.Outcome != OutcomeComplete {
		t.Errorf("got %+v, want usage %+v, complete", res, want)
	}
}

func TestIsUsageOnlyChunk(t *testing.T) {
	t.Parallel()
	data := func(event string) []byte {
		return []byte(strings.TrimSuffix(strings.TrimPrefix(event, "data: "), "\n\n"))
	}
	tests := []struct {
		name string
		data []byte
		want bool
	}{
		{"usage chunk", data(openAIUsageChunk), true},
		{"content chunk", data(openAIChunk("hi", "")), false},
		{"azure prompt filter chunk", data(cut(azureStream, "\n\n")), false},
		{"empty choices null usage", []byte(`{"choices":[],"usage":null}`), false},
		{"choices missing", []byte(`{"usage":{"prompt_tokens":1}}`), false},
		{"done", []byte(`[DONE]`), false},
		{"malformed", []byte(`{"choices":[],"usage":{`), false},
	}
	for _, tt := range tests {
		if got := IsUsageOnlyChunk(tt.data); got != tt.want {
			t.Errorf("%s: IsUsageOnlyChunk = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestStreamMeterFeedEvent: a Responses stream fed event by event, as a
// WebSocket carries it, meters as the same stream fed as SSE, and the
// response ends exactly at its terminal event (or its error).
func TestStreamMeterFeedEvent(t *testing.T) {
	t.Parallel()
	for _, tt := range meterCases {
		if tt.info.Endpoint != EndpointResponses {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			evs := sseEvents(t, []byte(tt.stream))
			m := NewStreamMeter(tt.info)
			endAt := -1
			for i, ev := range evs {
				if m.FeedEvent([]byte(ev.Data)) && endAt < 0 {
					endAt = i
				}
			}
			wantEnd := len(evs) - 1
			if tt.want.Outcome == OutcomeTruncated {
				wantEnd = -1
			}
			if endAt != wantEnd {
				t.Errorf("ended at event %d of %d, want %d", endAt, len(evs), wantEnd)
			}
			if got := m.Finish(tt.eof); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
