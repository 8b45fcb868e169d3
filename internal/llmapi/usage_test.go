package llmapi

import (
	"errors"
	"testing"
)

func TestUsageFromJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    Provider
		e    Endpoint
		body string
		want Usage
	}{
		{"anthropic with cache TTLs", Anthropic, EndpointMessages,
			`{"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Hi!"}],"stop_reason":"end_turn","stop_sequence":null,
			"usage":{"input_tokens":10,"cache_creation_input_tokens":3000,"cache_read_input_tokens":20000,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":500,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"}}`,
			Usage{InputTokens: 10, CacheCreationInputTokens: 3000, CacheCreation5m: 1000, CacheCreation1h: 2000, CacheReadInputTokens: 20000, OutputTokens: 500}},
		{"anthropic count_tokens has no usage member", Anthropic, EndpointCountTokens, `{"input_tokens":2095}`, Usage{}},
		{"openai chat", OpenAI, EndpointChat,
			`{"id":"chatcmpl-123","object":"chat.completion","created":1677652288,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":64,"audio_tokens":0}}}`,
			Usage{InputTokens: 86, CacheReadInputTokens: 1920, OutputTokens: 300, ReasoningTokens: 64}},
		{"responses", OpenAI, EndpointResponses,
			`{"id":"resp_1","object":"response","status":"completed","model":"o3-2025-04-16","output":[],"usage":{"input_tokens":328,"input_tokens_details":{"cached_tokens":128},"output_tokens":52,"output_tokens_details":{"reasoning_tokens":32},"total_tokens":380}}`,
			Usage{InputTokens: 200, CacheReadInputTokens: 128, OutputTokens: 52, ReasoningTokens: 32}},
		{"embeddings", OpenAI, EndpointEmbeddings,
			`{"object":"list","data":[{"object":"embedding","embedding":[0.0023064255,-0.009327292],"index":0}],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`,
			Usage{InputTokens: 8}},
		{"gemini", Gemini, EndpointGenerate,
			`{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":4000,"cachedContentTokenCount":3000,"candidatesTokenCount":100,"toolUsePromptTokenCount":50,"thoughtsTokenCount":700,"totalTokenCount":4850},"modelVersion":"gemini-2.5-pro"}`,
			Usage{InputTokens: 1050, CacheReadInputTokens: 3000, OutputTokens: 800, ReasoningTokens: 700}},
		{"gemini array keeps the latest", Gemini, EndpointStreamGenerate, geminiArrayStream, geminiFinal},
		{"ollama", Ollama, EndpointOllamaChat,
			`{"model":"llama3.2","created_at":"2023-12-12T14:13:43.416799Z","message":{"role":"assistant","content":"Hello!"},"done":true,"total_duration":5191566416,"load_duration":2154458,"prompt_eval_count":26,"prompt_eval_duration":383809000,"eval_count":298,"eval_duration":4799921000}`,
			Usage{InputTokens: 26, OutputTokens: 298}},
		{"null usage fields ignored", OpenAI, EndpointChat, `{"usage":{"prompt_tokens":5,"completion_tokens":null,"prompt_tokens_details":null}}`, Usage{InputTokens: 5}},
		{"negative counts are zero", Anthropic, EndpointMessages, `{"usage":{"input_tokens":-5,"output_tokens":7}}`, Usage{OutputTokens: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := UsageFromJSON(tt.p, tt.e, []byte(tt.body))
			if tt.want == (Usage{}) {
				if !errors.Is(err, ErrNoUsage) {
					t.Errorf("err = %v, want ErrNoUsage", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	if _, err := UsageFromJSON(OpenAI, EndpointChat, []byte(`{"usage":{"prompt_tokens":5`)); !errors.Is(err, ErrMalformedBody) {
		t.Errorf("malformed body: err = %v", err)
	}
	if _, err := UsageFromJSON(OpenAI, EndpointChat, []byte(`{"id":"x"}`)); !errors.Is(err, ErrNoUsage) {
		t.Errorf("no usage: err = %v", err)
	}
}

func TestUsageTotalInput(t *testing.T) {
	t.Parallel()
	u := Usage{InputTokens: 10, CacheCreationInputTokens: 3000, CacheCreation1h: 2000, CacheReadInputTokens: 20000, OutputTokens: 5}
	if got := u.TotalInput(); got != 23010 {
		t.Errorf("TotalInput = %d, want 23010", got)
	}
}
