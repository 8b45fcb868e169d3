package llmapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestParseProvider(t *testing.T) {
	t.Parallel()
	for _, p := range []Provider{Anthropic, OpenAI, Azure, Gemini, Ollama, OpenAICompatible} {
		got, err := ParseProvider(strings.ToUpper(p.String()))
		if err != nil || got != p {
			t.Errorf("ParseProvider(%q) = %v, %v", p, got, err)
		}
	}
	if _, err := ParseProvider("bedrock"); !errors.Is(err, ErrUnknownProvider) {
		t.Errorf("ParseProvider(bedrock) err = %v", err)
	}
}

func TestEndpointOf(t *testing.T) {
	t.Parallel()
	tests := map[string]Endpoint{
		"/v1/messages":                                        EndpointMessages,
		"/v1/messages/":                                       EndpointMessages,
		"/v1/messages/count_tokens":                           EndpointCountTokens,
		"/v1/messages/batches":                                EndpointOther,
		"/v1/chat/completions":                                EndpointChat,
		"/openai/deployments/gpt4o/chat/completions":          EndpointChat,
		"/v1beta/openai/chat/completions":                     EndpointChat,
		"/v1/completions":                                     EndpointCompletions,
		"/v1/responses":                                       EndpointResponses,
		"/v1/responses/resp_123":                              EndpointOther,
		"/v1/embeddings":                                      EndpointEmbeddings,
		"/v1beta/models/gemini-2.5-pro:generateContent":       EndpointGenerate,
		"/v1beta/models/gemini-2.5-pro:streamGenerateContent": EndpointStreamGenerate,
		"/v1beta/models/gemini-2.5-pro:countTokens":           EndpointCountTokens,
		"/v1beta/models/text-embedding-004:embedContent":      EndpointEmbeddings,
		"/v1beta/models/x:unknownMethod":                      EndpointOther,
		"/api/chat":                                           EndpointOllamaChat,
		"/api/generate":                                       EndpointOllamaGenerate,
		"/api/embed":                                          EndpointEmbeddings,
		"/api/tags":                                           EndpointModels,
		"/v1/models":                                          EndpointModels,
		"/v1/models/claude-sonnet-4-5":                        EndpointModels,
		"/v1beta/models":                                      EndpointModels,
		"/":                                                   EndpointOther,
		"":                                                    EndpointOther,
		"/v1/files/file-abc/content":                          EndpointOther,
		"/healthz":                                            EndpointOther,
	}
	for path, want := range tests {
		if got := EndpointOf(path); got != want {
			t.Errorf("EndpointOf(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, target string
		header       map[string]string
		want         Provider
	}{
		{"anthropic version header", "/v1/models", map[string]string{"anthropic-version": "2023-06-01"}, Anthropic},
		{"anthropic api key", "/anything", map[string]string{"x-api-key": "sk-ant"}, Anthropic},
		{"anthropic path", "/v1/messages", nil, Anthropic},
		{"anthropic count tokens", "/v1/messages/count_tokens", map[string]string{"Authorization": "Bearer t"}, Anthropic},
		{"azure api-key", "/openai/v1/chat/completions", map[string]string{"api-key": "k"}, Azure},
		{"azure deployment path", "/openai/deployments/d/chat/completions?api-version=2024-10-21", map[string]string{"Authorization": "Bearer entra"}, Azure},
		{"gemini header", "/v1beta/models", map[string]string{"x-goog-api-key": "k"}, Gemini},
		{"gemini key query", "/v1beta/models/gemini-2.5-pro:generateContent?key=abc", nil, Gemini},
		{"gemini path", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", nil, Gemini},
		{"gemini openai surface", "/v1beta/openai/chat/completions", map[string]string{"Authorization": "Bearer k"}, OpenAI},
		{"ollama chat", "/api/chat", nil, Ollama},
		{"ollama embed", "/api/embed", nil, Ollama},
		{"ollama ps", "/api/ps", nil, Ollama},
		{"openai chat", "/v1/chat/completions", map[string]string{"Authorization": "Bearer sk"}, OpenAI},
		{"openai responses", "/v1/responses", nil, OpenAI},
		{"openai embeddings", "/v1/embeddings", nil, OpenAI},
		{"api_key query is not gemini", "/v1/chat/completions?api_key=x", nil, OpenAI},
		{"unknown path passes", "/some/vendor/path", nil, OpenAICompatible},
		{"root", "/", nil, OpenAICompatible},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("POST", tt.target, nil)
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			if got := Detect(r); got != tt.want {
				t.Errorf("Detect = %v, want %v", got, tt.want)
			}
		})
	}
}

const anthropicRequest = `{"model":"claude-sonnet-4-5-20250929","max_tokens":32000,"stream":true,
 "metadata":{"user_id":"user_3f2a_account__session_9c1e"},
 "system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
 "messages":[{"role":"user","content":[{"type":"text","text":"Fix the bug in main.go"},
   {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}}]},
  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"Read","input":{"file_path":"/src/main.go"}}]},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"package main\nfunc main() {}\n"}]}],
 "tools":[{"name":"Read","description":"Reads a file","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}}}}],
 "unknown_future_field":{"nested":[1,2,3]}}`

func TestInspectRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		p        Provider
		path     string
		query    string
		body     string
		want     RequestInfo
		estimate bool // only check that InputEstimate > 0
	}{
		{"anthropic streaming", Anthropic, "/v1/messages", "", anthropicRequest, RequestInfo{
			Provider: Anthropic, Endpoint: EndpointMessages, Model: "claude-sonnet-4-5-20250929",
			Stream: true, Framing: FramingSSE, MaxOutputTokens: 32000, UserID: "user_3f2a_account__session_9c1e",
		}, true},
		{"anthropic not streaming", Anthropic, "/v1/messages", "", `{"model":"claude-haiku-4-5","max_tokens":1024,"messages":[{"role":"user","content":"abcdefgh"}]}`, RequestInfo{
			Provider: Anthropic, Endpoint: EndpointMessages, Model: "claude-haiku-4-5", MaxOutputTokens: 1024, InputEstimate: 2,
		}, false},
		{"count tokens never streams", Anthropic, "/v1/messages/count_tokens", "", `{"model":"claude-opus-4-1","stream":true,"messages":[{"role":"user","content":"abcd"}]}`, RequestInfo{
			Provider: Anthropic, Endpoint: EndpointCountTokens, Model: "claude-opus-4-1", InputEstimate: 1,
		}, false},
		{"openai chat include usage", OpenAI, "/v1/chat/completions", "", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":500,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello"}]}`, RequestInfo{
			Provider: OpenAI, Endpoint: EndpointChat, Model: "gpt-4o", Stream: true, Framing: FramingSSE, MaxOutputTokens: 500, IncludeUsage: true, InputEstimate: 4,
		}, false},
		{"openai stream false", OpenAI, "/v1/chat/completions", "", `{"model":"gpt-4.1","stream":false,"max_tokens":null,"messages":[]}`, RequestInfo{
			Provider: OpenAI, Endpoint: EndpointChat, Model: "gpt-4.1",
		}, false},
		{"responses", OpenAI, "/v1/responses", "", `{"model":"o4-mini","input":"Write a haiku","instructions":"poet","stream":true,"max_output_tokens":256}`, RequestInfo{
			Provider: OpenAI, Endpoint: EndpointResponses, Model: "o4-mini", Stream: true, Framing: FramingSSE, MaxOutputTokens: 256, InputEstimate: 5,
		}, false},
		{"azure deployment model", Azure, "/openai/deployments/prod-gpt4o/chat/completions", "api-version=2024-10-21", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`, RequestInfo{
			Provider: Azure, Endpoint: EndpointChat, Model: "prod-gpt4o", Stream: true, Framing: FramingSSE, InputEstimate: 1,
		}, false},
		{"gemini sse", Gemini, "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "alt=sse", `{"contents":[{"role":"user","parts":[{"text":"Explain AI"}]}],"generationConfig":{"maxOutputTokens":800,"temperature":0.2}}`, RequestInfo{
			Provider: Gemini, Endpoint: EndpointStreamGenerate, Model: "gemini-2.5-flash", Stream: true, Framing: FramingSSE, MaxOutputTokens: 800, InputEstimate: 3,
		}, false},
		{"gemini json array", Gemini, "/v1beta/models/gemini-2.5-pro:streamGenerateContent", "", `{"contents":[{"parts":[{"text":"hi"},{"inlineData":{"mimeType":"image/png","data":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}]}]}`, RequestInfo{
			Provider: Gemini, Endpoint: EndpointStreamGenerate, Model: "gemini-2.5-pro", Stream: true, Framing: FramingJSONArray, InputEstimate: 1,
		}, false},
		{"gemini generate", Gemini, "/v1beta/models/gemini-3-pro-preview:generateContent", "", `{"contents":[]}`, RequestInfo{
			Provider: Gemini, Endpoint: EndpointGenerate, Model: "gemini-3-pro-preview",
		}, false},
		{"ollama chat streams by default", Ollama, "/api/chat", "", `{"model":"llama3.2","messages":[{"role":"user","content":"why is the sky blue?"}],"options":{"num_predict":128}}`, RequestInfo{
			Provider: Ollama, Endpoint: EndpointOllamaChat, Model: "llama3.2", Stream: true, Framing: FramingNDJSON, MaxOutputTokens: 128, InputEstimate: 5,
		}, false},
		{"ollama stream false", Ollama, "/api/generate", "", `{"model":"qwen2.5-coder:7b","prompt":"hello","stream":false,"options":{"num_predict":-1}}`, RequestInfo{
			Provider: Ollama, Endpoint: EndpointOllamaGenerate, Model: "qwen2.5-coder:7b", InputEstimate: 2,
		}, false},
		{"ollama stream null streams", Ollama, "/api/generate", "", `{"model":"m","prompt":"","stream":null}`, RequestInfo{
			Provider: Ollama, Endpoint: EndpointOllamaGenerate, Model: "m", Stream: true, Framing: FramingNDJSON,
		}, false},
		{"ollama openai surface", Ollama, "/v1/chat/completions", "", `{"model":"llama3.2","messages":[]}`, RequestInfo{
			Provider: Ollama, Endpoint: EndpointChat, Model: "llama3.2",
		}, false},
		{"get models empty body", OpenAI, "/v1/models", "", ``, RequestInfo{Provider: OpenAI, Endpoint: EndpointModels}, false},
		{"passthrough never parsed", Anthropic, "/v1/files", "", `not json at all`, RequestInfo{Provider: Anthropic, Endpoint: EndpointOther}, false},
		{"escaped keys and model", OpenAI, "/v1/chat/completions", "", `{"mod\u0065l":"gpt-5\u002dmini","stre\u0061m":true}`, RequestInfo{
			Provider: OpenAI, Endpoint: EndpointChat, Model: "gpt-5-mini", Stream: true, Framing: FramingSSE,
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, _ := url.ParseQuery(tt.query)
			got, err := InspectRequest(tt.p, tt.path, q, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.estimate {
				if got.InputEstimate <= 0 {
					t.Errorf("InputEstimate = %d, want > 0", got.InputEstimate)
				}
				got.InputEstimate = 0
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestInspectRequestEstimateSkipsBinary(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("word ", 400) // 2000 bytes of text
	image := strings.Repeat("A", 100000)
	body := `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":[` +
		`{"type":"text","text":"` + text + `"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + image + `"}}]}]}`
	info, err := InspectRequest(Anthropic, "/v1/messages", nil, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if info.InputEstimate != 500 {
		t.Errorf("InputEstimate = %d, want 500 (2000 text bytes / 4; the base64 image is not text)", info.InputEstimate)
	}
}

func TestInspectRequestMalformed(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"model":"x",`, `{"model":"x"} trailing`, `[1,2]`, `"str"`, `{"messages":[{"content":"\x01"}]}`} {
		_, err := InspectRequest(Anthropic, "/v1/messages", nil, []byte(body))
		var se *SyntaxError
		if !errors.Is(err, ErrMalformedBody) || !errors.As(err, &se) {
			t.Errorf("InspectRequest(%q) err = %v, want ErrMalformedBody with an offset", body, err)
		}
	}
}

func TestInjectIncludeUsage(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"adds member keeping bytes", `{"model":"gpt-4o", "stream":true ,"x":{"deep":[1,{"a":null}]}}`,
			`{"model":"gpt-4o", "stream":true ,"x":{"deep":[1,{"a":null}]},"stream_options":{"include_usage":true}}`},
		{"keeps trailing whitespace", "{\"stream\":true\n}\n", "{\"stream\":true,\"stream_options\":{\"include_usage\":true}\n}\n"},
		{"empty object", `{ }`, `{"stream_options":{"include_usage":true} }`},
		{"existing options", `{"stream_options":{"foo":"bar"},"stream":true}`, `{"stream_options":{"include_usage":true,"foo":"bar"},"stream":true}`},
		{"empty options", `{"stream_options":{ },"stream":true}`, `{"stream_options":{"include_usage":true },"stream":true}`},
		{"false flag", `{"stream_options":{"include_usage":false,"z":1}}`, `{"stream_options":{"include_usage":true,"z":1}}`},
		{"null flag", `{"stream_options":{"include_usage" : null}}`, `{"stream_options":{"include_usage" : true}}`},
		{"null options", `{"stream_options":null,"a":1}`, `{"stream_options":{"include_usage":true},"a":1}`},
		{"already true", `{"stream_options":{"include_usage":true}}`, `{"stream_options":{"include_usage":true}}`},
		{"duplicate options edits the last", `{"stream_options":{},"stream_options":{"include_usage":false}}`, `{"stream_options":{},"stream_options":{"include_usage":true}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := []byte(tt.in)
			orig := bytes.Clone(in)
			got, err := InjectIncludeUsage(in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if !bytes.Equal(in, orig) {
				t.Error("input modified")
			}
			if !json.Valid(got) {
				t.Errorf("output is not valid JSON: %s", got)
			}
			info, err := InspectRequest(OpenAI, "/v1/chat/completions", nil, got)
			if err != nil || !info.IncludeUsage {
				t.Errorf("re-inspected IncludeUsage = %v, %v", info.IncludeUsage, err)
			}
		})
	}
	for _, bad := range []string{``, `[]`, `{"a":`, `{"a":1}}`} {
		if _, err := InjectIncludeUsage([]byte(bad)); !errors.Is(err, ErrMalformedBody) {
			t.Errorf("InjectIncludeUsage(%q) err = %v", bad, err)
		}
	}
}

// TestInjectIncludeUsageKeepsFields decodes before and after: apart from
// stream_options every member, unknown and nested ones included, is equal.
func TestInjectIncludeUsageKeepsFields(t *testing.T) {
	t.Parallel()
	in := `{"model":"gpt-5","messages":[{"role":"user","content":[{"type":"text","text":"hi \u00e9"}]}],` +
		`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}],` +
		`"vendor_extension":{"a":[true,false,null,1.5e10]},"stream":true,"stream_options":{"other":1}}`
	out, err := InjectIncludeUsage([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var before, after map[string]any
	if err := json.Unmarshal([]byte(in), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &after); err != nil {
		t.Fatal(err)
	}
	wantOpts := map[string]any{"other": 1.0, "include_usage": true}
	if !reflect.DeepEqual(after["stream_options"], wantOpts) {
		t.Errorf("stream_options = %v, want %v", after["stream_options"], wantOpts)
	}
	delete(before, "stream_options")
	delete(after, "stream_options")
	if !reflect.DeepEqual(before, after) {
		t.Errorf("members changed:\nbefore %v\nafter  %v", before, after)
	}
}
