package llmfake

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

const writeScript = `
turns:
  - text: "Writing it."
    tool_calls:
      - name: Write
        input:
          file_path: "{{cwd}}/out.txt"
          content: "line one\nline two, with some more words to split\n"
final: "All done."
`

func scripted(t testing.TB, src string) *Scripts {
	t.Helper()
	scs, err := ParseScripts("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return scs
}

func TestAnthropicMessages(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{})
	w := do(t, s, "POST", "/v1/messages", anthSmall, "x-api-key", "k1")
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if id := w.Header().Get("request-id"); !strings.HasPrefix(id, "req_01") {
		t.Errorf("request-id = %q", id)
	}
	if h := w.Header().Get("anthropic-ratelimit-requests-limit"); h != "" {
		t.Errorf("rate-limit header %q without a configured limit", h)
	}
	m := decode(t, w.Body.String())
	text, _ := path(m, "content", 0, "text").(string)
	if got, want := num(path(m, "usage", "output_tokens")), tokensOf(len(text)); got != want || got != defaultTokensMean {
		t.Errorf("output_tokens = %d, text has %d tokens, want %d", got, want, defaultTokensMean)
	}
	if got := num(path(m, "usage", "input_tokens")); got != tokensOf(len("hello there")) {
		t.Errorf("input_tokens = %d", got)
	}
	if path(m, "stop_reason") != "end_turn" || path(m, "type") != "message" || !strings.HasPrefix(path(m, "id").(string), "msg_01") {
		t.Errorf("message = %v", m)
	}
	// Deterministic: the same request gets the same text.
	m2 := decode(t, do(t, s, "POST", "/v1/messages", anthSmall).Body.String())
	if path(m2, "content", 0, "text") != text {
		t.Errorf("default text not deterministic: %q vs %q", path(m2, "content", 0, "text"), text)
	}
}

func TestAnthropicStream(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{})
	body := strings.Replace(anthSmall, `"max_tokens":100`, `"max_tokens":100,"stream":true`, 1)
	w := do(t, s, "POST", "/v1/messages", body)
	if ct := w.Header().Get("content-type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content-type %q", ct)
	}
	evs := events(t, w.Body.String())
	var types []string
	var text strings.Builder
	for _, ev := range evs {
		types = append(types, ev.Type)
		m := decode(t, ev.Data)
		if m["type"] != ev.Type {
			t.Errorf("event %s has data type %v", ev.Type, m["type"])
		}
		if !strings.HasPrefix(ev.Data, `{"type":`) {
			t.Errorf("event data does not start with type: %s", ev.Data)
		}
		if ev.Type == "content_block_delta" {
			text.WriteString(path(m, "delta", "text").(string))
		}
	}
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
		"content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	start := decode(t, evs[0].Data)
	if got := num(path(start, "message", "usage", "output_tokens")); got != 1 {
		t.Errorf("message_start output_tokens = %d, want a small count", got)
	}
	for _, f := range []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"} {
		if path(start, "message", "usage", f) == nil {
			t.Errorf("message_start usage lacks %s", f)
		}
	}
	delta := decode(t, evs[len(evs)-2].Data)
	if got := num(path(delta, "usage", "output_tokens")); got != tokensOf(text.Len()) || got != defaultTokensMean {
		t.Errorf("message_delta output_tokens = %d, streamed %d tokens", got, tokensOf(text.Len()))
	}
	if path(delta, "delta", "stop_reason") != "end_turn" {
		t.Errorf("stop_reason = %v", path(delta, "delta", "stop_reason"))
	}
	if v, ok := path(delta, "delta").(map[string]any)["stop_sequence"]; !ok || v != nil {
		t.Errorf("message_delta lacks stop_sequence: null")
	}
}

func TestAnthropicToolUse(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{Scripts: scripted(t, writeScript)})
	req := `{"model":"m","max_tokens":1000,"stream":%s,"tools":[{"name":"Write","input_schema":{"type":"object"}}],
	  "system":[{"type":"text","text":"You are an agent."}],
	  "messages":[{"role":"user","content":"do it"},{"role":"user","content":[{"type":"text","text":" - Primary working directory: /work/x\n"}]}]}`
	var want map[string]any
	json.Unmarshal([]byte(`{"file_path":"/work/x/out.txt","content":"line one\nline two, with some more words to split\n"}`), &want)

	w := do(t, s, "POST", "/v1/messages", strings.Replace(req, "%s", "false", 1))
	m := decode(t, w.Body.String())
	if path(m, "stop_reason") != "tool_use" || path(m, "content", 1, "type") != "tool_use" || path(m, "content", 1, "name") != "Write" {
		t.Fatalf("reply = %s", w.Body)
	}
	if got := path(m, "content", 1, "input"); !jsonEqual(got, want) {
		t.Errorf("input = %v, want %v", got, want)
	}
	if id, _ := path(m, "content", 1, "id").(string); !strings.HasPrefix(id, "toolu_01") {
		t.Errorf("tool id %q", id)
	}

	w = do(t, s, "POST", "/v1/messages", strings.Replace(req, "%s", "true", 1))
	var partial strings.Builder
	pieces := 0
	for _, ev := range events(t, w.Body.String()) {
		m := decode(t, ev.Data)
		if path(m, "delta", "type") == "input_json_delta" {
			p := path(m, "delta", "partial_json").(string)
			if p != "" {
				pieces++
			}
			partial.WriteString(p)
		}
		if ev.Type == "content_block_start" && path(m, "content_block", "type") == "tool_use" {
			if in, _ := path(m, "content_block", "input").(map[string]any); len(in) != 0 {
				t.Errorf("tool_use block starts with input %v", in)
			}
		}
	}
	if pieces < 3 {
		t.Errorf("input_json_delta came in %d pieces, want several", pieces)
	}
	var got any
	if err := json.Unmarshal([]byte(partial.String()), &got); err != nil || !jsonEqual(got, want) {
		t.Errorf("joined partial_json %q = %v (%v), want %v", partial.String(), got, err, want)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestOpenAIChat(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{Scripts: scripted(t, writeScript)})
	plain := `{"model":"gpt-x","messages":[{"role":"system","content":"sys"},{"role":"user","content":"hi"}]%s}`
	t.Run("non-streaming", func(t *testing.T) {
		t.Parallel()
		w := do(t, s, "POST", "/v1/chat/completions", strings.Replace(plain, "%s", "", 1), "authorization", "Bearer k")
		m := decode(t, w.Body.String())
		if path(m, "object") != "chat.completion" || path(m, "choices", 0, "finish_reason") != "stop" {
			t.Fatalf("reply %s", w.Body)
		}
		text := path(m, "choices", 0, "message", "content").(string)
		if num(path(m, "usage", "completion_tokens")) != tokensOf(len(text)) ||
			num(path(m, "usage", "total_tokens")) != num(path(m, "usage", "prompt_tokens"))+num(path(m, "usage", "completion_tokens")) {
			t.Errorf("usage %v for %q", path(m, "usage"), text)
		}
		if !strings.HasPrefix(w.Header().Get("x-request-id"), "req_") {
			t.Errorf("x-request-id %q", w.Header().Get("x-request-id"))
		}
	})
	t.Run("stream without usage", func(t *testing.T) {
		t.Parallel()
		w := do(t, s, "POST", "/v1/chat/completions", strings.Replace(plain, "%s", `,"stream":true`, 1))
		evs := events(t, w.Body.String())
		if evs[len(evs)-1].Data != "[DONE]" {
			t.Fatalf("last event %q", evs[len(evs)-1].Data)
		}
		for _, ev := range evs[:len(evs)-1] {
			if strings.Contains(ev.Data, `"usage"`) {
				t.Errorf("chunk carries usage without include_usage: %s", ev.Data)
			}
		}
	})
	t.Run("stream with usage", func(t *testing.T) {
		t.Parallel()
		w := do(t, s, "POST", "/v1/chat/completions", strings.Replace(plain, "%s", `,"stream":true,"stream_options":{"include_usage":true}`, 1))
		evs := events(t, w.Body.String())
		n := len(evs)
		last := decode(t, evs[n-2].Data)
		if choices := path(last, "choices").([]any); len(choices) != 0 || path(last, "usage", "completion_tokens") == nil {
			t.Fatalf("usage chunk = %s", evs[n-2].Data)
		}
		var text strings.Builder
		for _, ev := range evs[:n-2] {
			m := decode(t, ev.Data)
			if _, ok := m["usage"]; !ok || m["usage"] != nil {
				t.Errorf("chunk lacks usage: null: %s", ev.Data)
			}
			if c, ok := path(m, "choices", 0, "delta", "content").(string); ok {
				text.WriteString(c)
			}
		}
		if num(path(last, "usage", "completion_tokens")) != tokensOf(text.Len()) {
			t.Errorf("usage %v for %d bytes", path(last, "usage"), text.Len())
		}
		if path(decode(t, evs[n-3].Data), "choices", 0, "finish_reason") != "stop" {
			t.Errorf("finish chunk %s", evs[n-3].Data)
		}
	})
	t.Run("tool calls", func(t *testing.T) {
		t.Parallel()
		body := `{"model":"gpt-x","stream":true,"tools":[{"type":"function","function":{"name":"Write"}}],"messages":[{"role":"user","content":"Working directory: /w"}]}`
		w := do(t, s, "POST", "/v1/chat/completions", body)
		var args strings.Builder
		var name, finish string
		frags := 0
		for _, ev := range events(t, w.Body.String()) {
			if ev.Data == "[DONE]" {
				continue
			}
			m := decode(t, ev.Data)
			if tc := path(m, "choices", 0, "delta", "tool_calls", 0); tc != nil {
				if n, ok := path(tc, "function", "name").(string); ok {
					name = n
				}
				a, _ := path(tc, "function", "arguments").(string)
				if a != "" {
					frags++
				}
				args.WriteString(a)
			}
			if f, ok := path(m, "choices", 0, "finish_reason").(string); ok {
				finish = f
			}
		}
		if name != "Write" || finish != "tool_calls" || frags < 3 {
			t.Errorf("name %q finish %q fragments %d", name, finish, frags)
		}
		if !strings.Contains(args.String(), `"file_path":"/w/out.txt"`) {
			t.Errorf("arguments %s", args.String())
		}
	})
}

func TestOpenAIResponses(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{})
	w := do(t, s, "POST", "/v1/responses", `{"model":"gpt-x","input":"hello","instructions":"be brief"}`)
	m := decode(t, w.Body.String())
	if path(m, "object") != "response" || path(m, "status") != "completed" || path(m, "output", 0, "content", 0, "type") != "output_text" {
		t.Fatalf("response %s", w.Body)
	}
	text := path(m, "output", 0, "content", 0, "text").(string)
	if num(path(m, "usage", "output_tokens")) != tokensOf(len(text)) {
		t.Errorf("usage %v", path(m, "usage"))
	}

	w = do(t, s, "POST", "/v1/responses", `{"model":"gpt-x","input":[{"role":"user","content":"hello"}],"stream":true}`)
	evs := events(t, w.Body.String())
	for i, ev := range evs {
		m := decode(t, ev.Data)
		if num(m["sequence_number"]) != i || m["type"] != ev.Type {
			t.Errorf("event %d: %s", i, ev.Data)
		}
		if ev.Data == "[DONE]" {
			t.Error("responses stream has [DONE]")
		}
	}
	last := decode(t, evs[len(evs)-1].Data)
	if evs[0].Type != "response.created" || last["type"] != "response.completed" || num(path(last, "response", "usage", "output_tokens")) != defaultTokensMean {
		t.Errorf("first %s, last %s", evs[0].Type, evs[len(evs)-1].Data)
	}
}

func TestOpenAIEmbeddings(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{})
	w := do(t, s, "POST", "/v1/embeddings", `{"model":"text-embedding-3-small","input":["one two","three"],"dimensions":8}`)
	m := decode(t, w.Body.String())
	if n := len(path(m, "data").([]any)); n != 2 || len(path(m, "data", 1, "embedding").([]any)) != 8 {
		t.Fatalf("embeddings %s", w.Body)
	}
	if num(path(m, "usage", "prompt_tokens")) != tokensOf(len("one two")+len("three")) {
		t.Errorf("usage %v", path(m, "usage"))
	}
	w = do(t, s, "POST", "/v1/embeddings", `{"model":"e","input":"x","encoding_format":"base64"}`)
	b64, _ := path(decode(t, w.Body.String()), "data", 0, "embedding").(string)
	if raw, err := base64.StdEncoding.DecodeString(b64); err != nil || len(raw) != 4*1536 {
		t.Errorf("base64 embedding: %d bytes, %v", len(raw), err)
	}
}

func TestAzurePaths(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{Limits: Limits{RPM: 10}})
	for _, target := range []string{"/openai/deployments/dep-1/chat/completions?api-version=2024-10-21", "/openai/v1/chat/completions"} {
		body := `{"messages":[{"role":"user","content":"hi"}]}`
		if strings.HasPrefix(target, "/openai/v1") {
			body = `{"model":"dep-1","messages":[{"role":"user","content":"hi"}]}`
		}
		w := do(t, s, "POST", target, body, "api-key", "azure-key")
		m := decode(t, w.Body.String())
		if w.Code != 200 || path(m, "model") != "dep-1" {
			t.Errorf("%s: %d %s", target, w.Code, w.Body)
		}
		if w.Header().Get("x-ratelimit-limit-requests") != "10" {
			t.Errorf("%s: headers %v", target, w.Header())
		}
	}
	if st := s.Stats(); st.Keys["azure-key"].Requests != 2 {
		t.Errorf("requests of azure-key = %d, want 2 (api-key header is the key)", st.Keys["azure-key"].Requests)
	}
}

func TestGemini(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{})
	body := `{"contents":[{"role":"user","parts":[{"text":"hello"}]}],"systemInstruction":{"parts":[{"text":"sys"}]}}`
	w := do(t, s, "POST", "/v1beta/models/gemini-2.0-flash:generateContent", body, "x-goog-api-key", "g")
	m := decode(t, w.Body.String())
	if path(m, "candidates", 0, "finishReason") != "STOP" || path(m, "modelVersion") != "gemini-2.0-flash" ||
		num(path(m, "usageMetadata", "candidatesTokenCount")) != defaultTokensMean {
		t.Fatalf("reply %s", w.Body)
	}

	w = do(t, s, "POST", "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse", body)
	prev := 0
	evs := events(t, w.Body.String())
	for _, ev := range evs {
		n := num(path(decode(t, ev.Data), "usageMetadata", "candidatesTokenCount"))
		if n < prev {
			t.Errorf("usageMetadata not cumulative: %d after %d", n, prev)
		}
		prev = n
	}
	if len(evs) < 2 || prev != defaultTokensMean {
		t.Errorf("%d events, final candidates %d", len(evs), prev)
	}

	w = do(t, s, "POST", "/v1beta/models/gemini-2.0-flash:streamGenerateContent", body)
	var arr []map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &arr); err != nil || len(arr) != len(evs) {
		t.Errorf("array stream: %d items, %v: %s", len(arr), err, w.Body)
	}
}

func TestOllama(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{})
	w := do(t, s, "POST", "/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"hi"}]}`)
	if ct := w.Header().Get("content-type"); ct != "application/x-ndjson" {
		t.Errorf("content-type %q", ct)
	}
	lines := strings.Split(strings.TrimSpace(w.Body.String()), "\n")
	final := decode(t, lines[len(lines)-1])
	if final["done"] != true || num(final["eval_count"]) != defaultTokensMean || num(final["prompt_eval_count"]) != 1 ||
		num(final["total_duration"]) <= 0 || final["done_reason"] != "stop" {
		t.Errorf("final line %s", lines[len(lines)-1])
	}
	for _, l := range lines[:len(lines)-1] {
		if decode(t, l)["done"] != false {
			t.Errorf("line %s", l)
		}
	}
	w = do(t, s, "POST", "/api/generate", `{"model":"llama3.2","prompt":"hi","stream":false}`)
	m := decode(t, w.Body.String())
	if m["done"] != true || m["response"] == "" || num(m["eval_count"]) != defaultTokensMean {
		t.Errorf("generate %s", w.Body)
	}
}

func TestListsAndCounts(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{})
	tests := []struct {
		method, target, body string
		hdr                  []string
		check                func(m map[string]any) bool
	}{
		{"GET", "/v1/models", "", []string{"anthropic-version", "2023-06-01"}, func(m map[string]any) bool { return path(m, "data", 0, "type") == "model" }},
		{"GET", "/v1/models", "", []string{"authorization", "Bearer k"}, func(m map[string]any) bool { return m["object"] == "list" }},
		{"GET", "/v1/models/claude-x", "", []string{"x-api-key", "k"}, func(m map[string]any) bool { return m["id"] == "claude-x" }},
		{"GET", "/v1beta/models", "", nil, func(m map[string]any) bool { return path(m, "models", 0, "name") != nil }},
		{"GET", "/api/tags", "", nil, func(m map[string]any) bool { return path(m, "models", 0, "name") != nil }},
		{"POST", "/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":"12345678"}]}`, nil,
			func(m map[string]any) bool { return num(m["input_tokens"]) == 2 }},
		{"POST", "/v1beta/models/g:countTokens", `{"contents":[{"parts":[{"text":"1234"}]}]}`, nil,
			func(m map[string]any) bool { return num(m["totalTokens"]) == 1 }},
	}
	for _, tt := range tests {
		w := do(t, s, tt.method, tt.target, tt.body, tt.hdr...)
		if w.Code != 200 || !tt.check(decode(t, w.Body.String())) {
			t.Errorf("%s %s: %d %s", tt.method, tt.target, w.Code, w.Body)
		}
	}
}

// TestBadInput checks that mistakes get each provider's own error shape.
func TestBadInput(t *testing.T) {
	t.Parallel()
	anthropicShape := func(typ string) func(map[string]any) bool {
		return func(m map[string]any) bool {
			return m["type"] == "error" && path(m, "error", "type") == typ && path(m, "error", "message") != "" && m["request_id"] != ""
		}
	}
	openaiShape := func(m map[string]any) bool {
		e, ok := m["error"].(map[string]any)
		_, hasParam := e["param"]
		return ok && e["message"] != "" && e["type"] != nil && hasParam
	}
	geminiShape := func(code int, status string) func(map[string]any) bool {
		return func(m map[string]any) bool {
			return num(path(m, "error", "code")) == code && path(m, "error", "status") == status
		}
	}
	ollamaShape := func(m map[string]any) bool { s, _ := m["error"].(string); return s != "" }
	tests := []struct {
		name   string
		format Format
		method string
		target string
		body   string
		status int
		shape  func(map[string]any) bool
	}{
		{"anthropic malformed", "", "POST", "/v1/messages", `{"model":`, 400, anthropicShape("invalid_request_error")},
		{"anthropic no max_tokens", "", "POST", "/v1/messages", `{"model":"m","messages":[]}`, 400, anthropicShape("invalid_request_error")},
		{"anthropic no messages", "", "POST", "/v1/messages", `{"model":"m","max_tokens":5}`, 400, anthropicShape("invalid_request_error")},
		{"anthropic bad content", "", "POST", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":5}]}`, 400, anthropicShape("invalid_request_error")},
		{"anthropic wrong method", "", "GET", "/v1/messages", "", 405, anthropicShape("invalid_request_error")},
		{"anthropic unknown path", "", "POST", "/v1/nope", `{}`, 404, anthropicShape("not_found_error")},
		{"openai malformed", "", "POST", "/v1/chat/completions", `[1,`, 400, openaiShape},
		{"openai no model", "", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, 400, openaiShape},
		{"openai no messages", "", "POST", "/v1/chat/completions", `{"model":"m"}`, 400, openaiShape},
		{"responses no input", "", "POST", "/v1/responses", `{"model":"m"}`, 400, openaiShape},
		{"embeddings no input", "", "POST", "/v1/embeddings", `{"model":"m"}`, 400, openaiShape},
		{"openai unknown path", "", "POST", "/openai/v1/nope", `{}`, 404, openaiShape},
		{"gemini malformed", "", "POST", "/v1beta/models/g:generateContent", `{`, 400, geminiShape(400, "INVALID_ARGUMENT")},
		{"gemini no contents", "", "POST", "/v1beta/models/g:generateContent", `{}`, 400, geminiShape(400, "INVALID_ARGUMENT")},
		{"gemini unknown method", "", "POST", "/v1beta/models/g:explode", `{}`, 404, geminiShape(404, "NOT_FOUND")},
		{"ollama malformed", "", "POST", "/api/chat", `nope`, 400, ollamaShape},
		{"ollama no model", "", "POST", "/api/generate", `{"prompt":"x"}`, 400, ollamaShape},
		{"fixed anthropic rejects openai path", FormatAnthropic, "POST", "/v1/chat/completions", `{}`, 404, anthropicShape("not_found_error")},
		{"fixed openai rejects anthropic path", FormatOpenAI, "POST", "/v1/messages", anthSmall, 404, openaiShape},
		{"fixed gemini rejects ollama path", FormatGemini, "POST", "/api/chat", `{}`, 404, geminiShape(404, "NOT_FOUND")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, Config{Format: tt.format})
			w := do(t, s, tt.method, tt.target, tt.body, "x-api-key", "k")
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if !tt.shape(decode(t, w.Body.String())) {
				t.Errorf("body not in the provider's shape: %s", w.Body)
			}
		})
	}
	t.Run("ollama unknown path", func(t *testing.T) {
		t.Parallel()
		w := do(t, newServer(t, Config{Format: FormatOllama}), "POST", "/api/nope", "{}")
		if w.Code != 404 || w.Body.String() != "404 page not found" {
			t.Errorf("%d %q", w.Code, w.Body)
		}
	})
	t.Run("body too large", func(t *testing.T) {
		t.Parallel()
		big := `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"` + strings.Repeat("x", maxBody) + `"}]}`
		w := do(t, newServer(t, Config{}), "POST", "/v1/messages", big)
		if w.Code != http.StatusRequestEntityTooLarge || !anthropicShape("request_too_large")(decode(t, w.Body.String())) {
			t.Errorf("%d %s", w.Code, w.Body)
		}
	})
	t.Run("require key", func(t *testing.T) {
		t.Parallel()
		w := do(t, newServer(t, Config{RequireKey: true}), "POST", "/v1/messages", anthSmall)
		if w.Code != 401 || !anthropicShape("authentication_error")(decode(t, w.Body.String())) {
			t.Errorf("%d %s", w.Code, w.Body)
		}
	})
}
