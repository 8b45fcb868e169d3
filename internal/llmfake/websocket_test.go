package llmfake

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

const wsScript = `
session_key: key
scripts:
  - name: ws
    match: {user: "over the socket"}
    turns:
      - text: "Calling."
        tool_calls: [{name: exec_command, input: {cmd: "true"}}]
      - text: "No output seen."
        branches:
          - when: {contains: "exit 0"}
            text: "Saw the output."
`

func dialWS(t *testing.T, url string, hdr http.Header) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/v1/responses", &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// wsCreate sends a response.create and reads events up to the terminal
// one (response.completed / incomplete / failed, or error).
func wsCreate(t *testing.T, c *websocket.Conn, msg string) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	var evs []map[string]any
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read after %d events: %v", len(evs), err)
		}
		var ev map[string]any
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatalf("event %q: %v", b, err)
		}
		evs = append(evs, ev)
		switch ev["type"] {
		case "response.completed", "response.incomplete", "response.failed", "error":
			return evs
		}
	}
}

func last(evs []map[string]any) map[string]any { return evs[len(evs)-1] }

// TestResponsesWebSocket: Codex's transport. A conversation continues from
// previous_response_id with only the new items, warm-ups generate nothing,
// and mistakes are error events on a connection that stays open.
func TestResponsesWebSocket(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{Scripts: scriptsOf(t, wsScript), RequireKey: true})
	hs := startHTTP(t, s)
	c := dialWS(t, hs.URL, http.Header{"Authorization": {"Bearer k"}, "Openai-Beta": {"responses_websockets=2026-02-06"}})

	// A warm-up caches the instructions and generates nothing.
	warm := last(wsCreate(t, c, `{"type":"response.create","model":"gpt-x","generate":false,"instructions":"be brief","input":[]}`))
	warmID, _ := path(warm, "response", "id").(string)
	if warm["type"] != "response.completed" || warmID == "" || len(path(warm, "response", "output").([]any)) != 0 {
		t.Fatalf("warm-up answered %v", warm)
	}
	first := wsCreate(t, c, `{"type":"response.create","model":"gpt-x","previous_response_id":"`+warmID+`","tools":[{"type":"function","name":"exec_command"}],`+
		`"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"work over the socket"}]}]}`)
	if first[0]["type"] != "response.created" {
		t.Errorf("first event %v", first[0])
	}
	done := last(first)
	call, _ := path(done, "response", "output", 1).(map[string]any)
	if done["type"] != "response.completed" || call["type"] != "function_call" || call["name"] != "exec_command" {
		t.Fatalf("turn 1 = %v", done)
	}
	// Only the tool output is sent; the history comes from the cache.
	second := last(wsCreate(t, c, `{"type":"response.create","model":"gpt-x","previous_response_id":"`+path(done, "response", "id").(string)+`",`+
		`"tools":[{"type":"function","name":"exec_command"}],"input":[{"type":"function_call_output","call_id":"`+call["call_id"].(string)+`","output":"exit 0"}]}`))
	if got := path(second, "response", "output", 0, "content", 0, "text"); got != "Saw the output." {
		t.Errorf("turn 2 = %v, want the branch on the output", got)
	}
	for _, tc := range []struct{ msg, want string }{
		{`{"type":"response.create","model":"gpt-x","previous_response_id":"resp_nope","input":[]}`, "Previous response with id 'resp_nope' not found."},
		{`{"type":"session.update"}`, `Unsupported message type "session.update": expected "response.create".`},
		{`not json`, "Invalid JSON in WebSocket message"},
		{`{"type":"response.create","input":"hi"}`, "Missing required parameter: 'model'."},
	} {
		ev := last(wsCreate(t, c, tc.msg))
		if msg, _ := path(ev, "error", "message").(string); ev["type"] != "error" || num(ev["status"]) != 400 || !strings.HasPrefix(msg, tc.want) {
			t.Errorf("%s: got %v, want a 400 error event %q", tc.msg, ev, tc.want)
		}
	}
	// Still open: a string input is one user message.
	if ev := last(wsCreate(t, c, `{"type":"response.create","model":"gpt-x","input":"hello"}`)); ev["type"] != "response.completed" {
		t.Errorf("after errors: %v", ev)
	}
	if got := s.Stats().Keys["k"].Requests; got != 4 {
		t.Errorf("requests counted %d, want 4: two turns, the 400 for the missing model and hello (a warm-up and a malformed message count none)", got)
	}
}

// TestResponsesWebSocketLimits: a rate limit is an error event with its
// status; a missing key is refused at the upgrade; a cut closes the
// connection without a close frame.
func TestResponsesWebSocketLimits(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{RequireKey: true, Limits: Limits{RPM: 1}})
	hs := startHTTP(t, s)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/v1/responses", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("dial without a key: %v, %v; want 401", err, resp)
	}
	c := dialWS(t, hs.URL, http.Header{"Authorization": {"Bearer k"}})
	create := `{"type":"response.create","model":"gpt-x","input":"hi"}`
	if ev := last(wsCreate(t, c, create)); ev["type"] != "response.completed" {
		t.Fatalf("first: %v", ev)
	}
	ev := last(wsCreate(t, c, create))
	if ev["type"] != "error" || num(ev["status"]) != 429 || path(ev, "error", "code") != "rate_limit_exceeded" {
		t.Errorf("over the limit: %v, want a 429 error event", ev)
	}
	if path(ev, "headers", "retry-after") == nil {
		t.Errorf("429 event without retry-after: %v", ev)
	}

	cut := newServer(t, Config{Faults: Faults{CutRate: 1, AfterEvents: 2}})
	hc := startHTTP(t, cut)
	cc := dialWS(t, hc.URL, nil)
	if err := cc.Write(ctx, websocket.MessageText, []byte(create)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		_, _, err := cc.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				t.Errorf("a cut sent a close frame: %v", err)
			}
			break
		}
		n++
	}
	if n != 2 || cut.Stats().Total.Cuts != 1 {
		t.Errorf("cut after %d events (stats %+v), want 2", n, cut.Stats().Total)
	}
}
