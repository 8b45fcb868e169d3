package llmfake

import (
	"encoding/json"
	"strings"
	"testing"
)

// wantArgs is the tool input of writeScript for working directory /w.
const wantArgs = `{"content":"line one\nline two, with some more words to split\n","file_path":"/w/out.txt"}`

func TestToolCallsInEveryDialect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, target, body string
		args               func(t *testing.T, body string) string // extracts the Write arguments
	}{
		{"responses stream", "/v1/responses",
			`{"model":"m","stream":true,"instructions":"Working directory: /w","tools":[{"type":"function","name":"Write"}],"input":"go"}`,
			func(t *testing.T, body string) string {
				var args strings.Builder
				var done string
				for _, ev := range events(t, body) {
					m := decode(t, ev.Data)
					switch ev.Type {
					case "response.function_call_arguments.delta":
						args.WriteString(m["delta"].(string))
					case "response.function_call_arguments.done":
						done = m["arguments"].(string)
					case "response.completed":
						if path(m, "response", "output", 1, "type") != "function_call" || path(m, "response", "output", 1, "name") != "Write" {
							t.Errorf("completed output %v", path(m, "response", "output"))
						}
					}
				}
				if args.String() != done {
					t.Errorf("deltas %q != done %q", args.String(), done)
				}
				return done
			}},
		{"gemini", "/v1beta/models/g:generateContent",
			`{"systemInstruction":{"parts":[{"text":"Working directory: /w"}]},"tools":[{"functionDeclarations":[{"name":"Write"}]}],"contents":[{"parts":[{"text":"go"}]}]}`,
			func(t *testing.T, body string) string {
				m := decode(t, body)
				if path(m, "candidates", 0, "content", "parts", 1, "functionCall", "name") != "Write" {
					t.Errorf("parts %v", path(m, "candidates", 0, "content", "parts"))
				}
				b, _ := json.Marshal(path(m, "candidates", 0, "content", "parts", 1, "functionCall", "args"))
				return string(b)
			}},
		{"gemini sse", "/v1beta/models/g:streamGenerateContent?alt=sse",
			`{"systemInstruction":{"parts":[{"text":"Working directory: /w"}]},"tools":[{"functionDeclarations":[{"name":"Write"}]}],"contents":[{"parts":[{"text":"go"}]}]}`,
			func(t *testing.T, body string) string {
				evs := events(t, body)
				m := decode(t, evs[len(evs)-1].Data)
				b, _ := json.Marshal(path(m, "candidates", 0, "content", "parts", 0, "functionCall", "args"))
				return string(b)
			}},
		{"ollama stream", "/api/chat",
			`{"model":"l","tools":[{"type":"function","function":{"name":"Write"}}],"messages":[{"role":"system","content":"Working directory: /w"},{"role":"user","content":"go"}]}`,
			func(t *testing.T, body string) string {
				for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
					m := decode(t, l)
					if tc := path(m, "message", "tool_calls", 0, "function"); tc != nil {
						b, _ := json.Marshal(path(tc, "arguments"))
						return string(b)
					}
				}
				return ""
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, Config{Scripts: scripted(t, writeScript)})
			w := do(t, s, "POST", tt.target, tt.body)
			if w.Code != 200 {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			if got := tt.args(t, w.Body.String()); got != wantArgs {
				t.Errorf("arguments %s, want %s", got, wantArgs)
			}
		})
	}
}

func TestStreamErrorShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, target, body string
		check              func(last string) bool
	}{
		{"openai chat", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`,
			func(last string) bool {
				return strings.Contains(last, `data: {"error":{"message":`) && !strings.Contains(last, "[DONE]")
			}},
		{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"x"}`,
			func(last string) bool {
				return strings.Contains(last, "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\"")
			}},
		{"gemini array", "/v1beta/models/g:streamGenerateContent", `{"contents":[{"parts":[{"text":"x"}]}]}`,
			func(last string) bool { return strings.HasSuffix(last, `"status":"UNAVAILABLE"}}]`) }},
		{"ollama", "/api/chat", `{"model":"l","messages":[{"role":"user","content":"x"}]}`,
			func(last string) bool { return strings.HasSuffix(strings.TrimSpace(last), `unexpected EOF"}`) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, Config{Faults: Faults{StreamErrorRate: 1, AfterEvents: 1}})
			w := do(t, s, "POST", tt.target, tt.body)
			if w.Code != 200 || !tt.check(w.Body.String()) {
				t.Errorf("%d %s", w.Code, w.Body)
			}
		})
	}
}
