package llmapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/sse"
)

// nasty is a message that needs every kind of JSON escaping.
const nasty = "budget \"agent-7\" exhausted\n\tat $1.00 <&> \\ \x01 \u2028 é \xff"

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s is not JSON: %v", b, err)
	}
	return v
}

// wantMessage is nasty as a JSON decoder returns it (invalid UTF-8 replaced).
var wantMessage = strings.ToValidUTF8(nasty, "\uFFFD")

func TestErrorBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p      Provider
		status int
		kind   string
		want   map[string]any
	}{
		{Anthropic, 429, KindRateLimit, map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": wantMessage}}},
		{Anthropic, 529, KindOverloaded, map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": wantMessage}}},
		{OpenAI, 429, KindRateLimit, map[string]any{"error": map[string]any{"message": wantMessage, "type": "requests", "param": nil, "code": "rate_limit_exceeded"}}},
		{Azure, 400, KindInvalidRequest, map[string]any{"error": map[string]any{"message": wantMessage, "type": "invalid_request_error", "param": nil, "code": nil}}},
		{OpenAICompatible, 402, KindBilling, map[string]any{"error": map[string]any{"message": wantMessage, "type": "insufficient_quota", "param": nil, "code": "insufficient_quota"}}},
		{Gemini, 429, KindRateLimit, map[string]any{"error": map[string]any{"code": 429.0, "message": wantMessage, "status": "RESOURCE_EXHAUSTED"}}},
		{Gemini, 0, KindNotFound, map[string]any{"error": map[string]any{"code": 404.0, "message": wantMessage, "status": "NOT_FOUND"}}},
		{Gemini, 418, "teapot_error", map[string]any{"error": map[string]any{"code": 418.0, "message": wantMessage, "status": "UNKNOWN"}}},
		{Ollama, 503, KindOverloaded, map[string]any{"error": wantMessage}},
	}
	for _, tt := range tests {
		got := decode(t, ErrorBody(tt.p, tt.status, tt.kind, nasty))
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ErrorBody(%v, %d, %s):\ngot  %v\nwant %v", tt.p, tt.status, tt.kind, got, tt.want)
		}
	}
}

// TestErrorBodyClassifiesBack checks that our own answers classify as what
// they mean: a client (or a chained gateway) must not retry a billing error.
func TestErrorBodyClassifiesBack(t *testing.T) {
	t.Parallel()
	for _, p := range []Provider{Anthropic, OpenAI, Gemini} {
		f := Classify(p, 429, nil, ErrorBody(p, 429, KindRateLimit, "slow down"), testNow)
		if f.Class != ClassRateLimit {
			t.Errorf("%v rate limit classified as %v", p, f.Class)
		}
	}
	for _, p := range []Provider{Anthropic, OpenAI} {
		f := Classify(p, 429, nil, ErrorBody(p, 429, KindBilling, "budget exhausted"), testNow)
		if f.Class != ClassSpendLimit || f.Retryable {
			t.Errorf("%v billing error classified as %+v", p, f)
		}
	}
}

func sseEvents(t *testing.T, b []byte) []sse.Event {
	t.Helper()
	var p sse.Parser
	var evs []sse.Event
	if err := p.Feed(b, func(e sse.Event) { evs = append(evs, e) }); err != nil {
		t.Fatal(err)
	}
	if p.Pending() {
		t.Fatalf("frame %q does not end with a complete event", b)
	}
	return evs
}

func TestStreamErrorFrame(t *testing.T) {
	t.Parallel()
	t.Run("anthropic", func(t *testing.T) {
		t.Parallel()
		evs := sseEvents(t, StreamErrorFrame(Anthropic, EndpointMessages, KindOverloaded, nasty))
		if len(evs) != 1 || evs[0].Type != "error" {
			t.Fatalf("events = %+v, want one error event", evs)
		}
		want := map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": wantMessage}}
		if got := decode(t, []byte(evs[0].Data)); !reflect.DeepEqual(got, want) {
			t.Errorf("data = %v, want %v", got, want)
		}
	})
	t.Run("openai chat", func(t *testing.T) {
		t.Parallel()
		for _, p := range []Provider{OpenAI, Azure, OpenAICompatible, Ollama} {
			evs := sseEvents(t, StreamErrorFrame(p, EndpointChat, KindAPI, nasty))
			if len(evs) != 2 || evs[1].Data != "[DONE]" {
				t.Fatalf("%v: events = %+v, want an error chunk then [DONE]", p, evs)
			}
			e := decode(t, []byte(evs[0].Data))["error"].(map[string]any)
			if e["message"] != wantMessage || e["type"] != "server_error" {
				t.Errorf("%v: error = %v", p, e)
			}
		}
	})
	t.Run("responses", func(t *testing.T) {
		t.Parallel()
		evs := sseEvents(t, StreamErrorFrame(OpenAI, EndpointResponses, KindRateLimit, nasty))
		if len(evs) != 1 || evs[0].Type != "response.failed" {
			t.Fatalf("events = %+v", evs)
		}
		v := decode(t, []byte(evs[0].Data))
		resp := v["response"].(map[string]any)
		wantErr := map[string]any{"code": "rate_limit_exceeded", "message": wantMessage}
		if v["type"] != "response.failed" || resp["status"] != "failed" || !reflect.DeepEqual(resp["error"], wantErr) {
			t.Errorf("data = %v", v)
		}
	})
	t.Run("gemini", func(t *testing.T) {
		t.Parallel()
		evs := sseEvents(t, StreamErrorFrame(Gemini, EndpointStreamGenerate, KindOverloaded, nasty))
		want := map[string]any{"error": map[string]any{"code": 529.0, "message": wantMessage, "status": "UNAVAILABLE"}}
		if len(evs) != 1 || !reflect.DeepEqual(decode(t, []byte(evs[0].Data)), want) {
			t.Errorf("events = %+v", evs)
		}
	})
	t.Run("ollama native", func(t *testing.T) {
		t.Parallel()
		b := StreamErrorFrame(Ollama, EndpointOllamaChat, KindAPI, nasty)
		if !strings.HasSuffix(string(b), "}\n") || strings.Count(string(b), "\n") != 1 {
			t.Fatalf("frame %q is not one NDJSON line", b)
		}
		if got := decode(t, b)["error"]; got != wantMessage {
			t.Errorf("error = %v", got)
		}
	})
	// Each frame, appended to a cut stream, makes the meter report an error.
	t.Run("meter sees the frame", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			info   RequestInfo
			prefix string
		}{
			{anthropicInfo, cut(anthropicThinkingStream, "event: message_delta")},
			{chatInfo, openAIChatBody},
			{responsesInfo, cut(responsesStream, "event: response.completed")},
			{geminiSSEInfo, "data: " + gemini1 + "\n\n"},
			{ollamaChatInfo, cut(ollamaChatStream, `{"model":"llama3.2","created_at":"2023-08-04T19:22:45`)},
		}
		for _, c := range cases {
			frame := StreamErrorFrame(c.info.Provider, c.info.Endpoint, KindOverloaded, "upstream cut")
			res := meter(c.info, []string{c.prefix, string(frame)}, true)
			if res.Outcome != OutcomeErrored || res.ErrorMessage != "upstream cut" {
				t.Errorf("%v %v: result %+v", c.info.Provider, c.info.Endpoint, res)
			}
		}
	})
}

func TestStatusOf(t *testing.T) {
	t.Parallel()
	want := map[string]int{KindRateLimit: 429, KindOverloaded: 529, KindBilling: 402, KindNotFound: 404, "made_up": 500}
	for k, s := range want {
		if got := StatusOf(k); got != s {
			t.Errorf("StatusOf(%s) = %d, want %d", k, got, s)
		}
	}
}
