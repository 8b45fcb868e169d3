package llmfake

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/coder/websocket"

	"github.com/apiary-dev/apiary/internal/sse"
)

// The Responses API over WebSocket (GET /v1/responses with Upgrade:
// websocket), as Codex's built-in OpenAI provider uses it before it falls
// back to HTTPS. The client sends {"type":"response.create", …} messages
// whose other members are an HTTP Responses body without "stream"; the
// server answers each with the streaming events it would send over SSE, one
// JSON text message per event. A connection caches the conversation of the
// responses it produced, so a later response.create may name one in
// previous_response_id and send only the new input items. A create with
// "generate": false only warms that cache: it is answered with
// response.created and response.completed and no output.
//
// Each response.create runs through the same pipeline as an HTTP request
// (rate limits, faults, scripts). A failure the HTTP API answers with a
// status is sent as {"type":"error","status":N,"error":{…}} and the
// connection stays open; a reset or a cut closes the connection without a
// close frame.

// isWebSocket reports whether r asks to upgrade to a WebSocket.
func isWebSocket(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

// wsConn is one WebSocket connection's state.
type wsConn struct {
	s     *Server
	c     *websocket.Conn
	r     *http.Request
	model string // from an Azure path
	// convs maps a response id to the input items and output items of
	// that response, for previous_response_id.
	convs map[string][]json.RawMessage
}

// maxCachedResponses bounds a connection's cache of conversations.
const maxCachedResponses = 64

func (s *Server) serveResponsesWS(w http.ResponseWriter, r *http.Request, model string) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return // Accept has answered the client
	}
	defer c.CloseNow()
	c.SetReadLimit(maxBody)
	wc := &wsConn{s: s, c: c, r: r, model: model, convs: map[string][]json.RawMessage{}}
	ctx := r.Context()
	for {
		typ, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			wc.sendError(ctx, http.StatusBadRequest, "invalid_request_error", "", "Binary messages are not supported.")
			continue
		}
		if !wc.create(ctx, msg) {
			return
		}
	}
}

// create answers one client message; false means the connection is gone.
func (wc *wsConn) create(ctx context.Context, msg []byte) bool {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return wc.sendError(ctx, http.StatusBadRequest, "invalid_request_error", "", "Invalid JSON in WebSocket message: "+err.Error())
	}
	var typ string
	_ = json.Unmarshal(m["type"], &typ)
	if typ != "response.create" {
		return wc.sendError(ctx, http.StatusBadRequest, "invalid_request_error", "", "Unsupported message type "+strconv.Quote(typ)+": expected \"response.create\".")
	}
	delete(m, "type")
	var input []json.RawMessage
	if raw, ok := m["input"]; ok && len(raw) > 0 && raw[0] == '"' {
		// A string input is one user message.
		item, _ := json.Marshal(map[string]any{"type": "message", "role": "user", "content": json.RawMessage(raw)})
		input = []json.RawMessage{item}
	} else if ok {
		if err := json.Unmarshal(raw, &input); err != nil {
			return wc.sendError(ctx, http.StatusBadRequest, "invalid_request_error", "input", "Invalid type for 'input': expected a string or an array of input items.")
		}
	}
	if raw, ok := m["previous_response_id"]; ok && string(raw) != "null" {
		var prev string
		_ = json.Unmarshal(raw, &prev)
		items, found := wc.convs[prev]
		if !found {
			return wc.sendError(ctx, http.StatusBadRequest, "invalid_request_error", "previous_response_id",
				"Previous response with id '"+prev+"' not found.")
		}
		input = append(append([]json.RawMessage{}, items...), input...)
		delete(m, "previous_response_id")
	}
	all, _ := json.Marshal(input)
	m["input"] = all
	m["stream"] = json.RawMessage("true")
	generate := true
	if raw, ok := m["generate"]; ok {
		_ = json.Unmarshal(raw, &generate)
		delete(m, "generate")
	}
	if !generate {
		return wc.warm(ctx, m, input)
	}
	body, _ := json.Marshal(m)
	ww := &wsWriter{ctx: ctx, c: wc.c, h: http.Header{}}
	if !wc.run(ww, body) {
		return false
	}
	if ww.err != nil {
		return false
	}
	if ww.status != http.StatusOK {
		return ww.sendFailure()
	}
	if ww.respID != "" {
		wc.remember(ww.respID, append(input, ww.output...))
	}
	return true
}

// run sends body through the pipeline; false when a fault closed the
// connection.
func (wc *wsConn) run(ww *wsWriter, body []byte) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				panic(v)
			}
			ok = false
		}
	}()
	r := wc.r.Clone(wc.r.Context())
	r.Method = http.MethodPost
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	s := wc.s
	x := &exchange{s: s, w: ww, r: r, cfg: s.cfg.Load(), d: dOpenAI, ep: epResponses, model: wc.model, start: s.now()}
	x.key = apiKey(r)
	x.newRequestID()
	x.serve()
	x.finish()
	ww.sendFinal()
	return true
}

// warm answers a create with generate:false: the conversation is cached
// under a new response id and nothing is generated or charged.
func (wc *wsConn) warm(ctx context.Context, m map[string]json.RawMessage, input []json.RawMessage) bool {
	id := wc.s.ids.nextN("resp_", 48)
	var model string
	_ = json.Unmarshal(m["model"], &model)
	resp := func(status string) map[string]any {
		return map[string]any{"id": id, "object": "response", "status": status, "model": model, "output": []any{},
			"usage": map[string]any{"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}}
	}
	for i, ev := range []map[string]any{
		{"type": "response.created", "response": resp("in_progress")},
		{"type": "response.completed", "response": resp("completed")},
	} {
		ev["sequence_number"] = i
		b, _ := json.Marshal(ev)
		if wc.c.Write(ctx, websocket.MessageText, b) != nil {
			return false
		}
	}
	wc.remember(id, input)
	return true
}

func (wc *wsConn) remember(id string, items []json.RawMessage) {
	if len(wc.convs) >= maxCachedResponses {
		for k := range wc.convs {
			delete(wc.convs, k)
			break
		}
	}
	wc.convs[id] = items
}

func (wc *wsConn) sendError(ctx context.Context, status int, typ, param, msg string) bool {
	var p any
	if param != "" {
		p = param
	}
	b, _ := json.Marshal(map[string]any{"type": "error", "status": status,
		"error": map[string]any{"type": typ, "code": nil, "message": msg, "param": p}})
	return wc.c.Write(ctx, websocket.MessageText, b) == nil
}

// wsWriter is the http.ResponseWriter the pipeline writes one response
// into: each SSE event it flushes goes out as a WebSocket text message; a
// non-200 body is kept and sent as one error event.
type wsWriter struct {
	ctx    context.Context
	c      *websocket.Conn
	h      http.Header
	status int
	p      sse.Parser
	body   []byte // the body of a failure
	err    error

	respID string            // from response.completed / incomplete
	output []json.RawMessage // its output items
	// final is the terminal event, held back until the exchange has been
	// recorded, so that a client that has read it sees it in the stats.
	final []byte
}

var _ http.Flusher = (*wsWriter)(nil)

func (w *wsWriter) Header() http.Header { return w.h }

func (w *wsWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *wsWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.status != http.StatusOK {
		w.body = append(w.body, b...)
		return len(b), nil
	}
	err := w.p.Feed(b, func(ev sse.Event) {
		if w.err != nil {
			return
		}
		if w.note([]byte(ev.Data)) {
			w.final = []byte(ev.Data)
			return
		}
		w.err = w.c.Write(w.ctx, websocket.MessageText, []byte(ev.Data))
	})
	if err == nil {
		err = w.err
	}
	if err != nil {
		return 0, err
	}
	return len(b), nil
}

// Flush is a no-op: every complete event is sent as soon as it is written.
func (w *wsWriter) Flush() {}

// note keeps the id and output of the final response event and says
// whether data is a terminal event.
func (w *wsWriter) note(data []byte) bool {
	var ev struct {
		Type     string `json:"type"`
		Response struct {
			ID     string            `json:"id"`
			Output []json.RawMessage `json:"output"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return false
	}
	switch ev.Type {
	case "response.completed", "response.incomplete":
		w.respID, w.output = ev.Response.ID, ev.Response.Output
		return true
	case "response.failed":
		return true
	}
	return false
}

// sendFinal sends the held-back terminal event.
func (w *wsWriter) sendFinal() {
	if w.final != nil && w.err == nil {
		w.err = w.c.Write(w.ctx, websocket.MessageText, w.final)
	}
}

// sendFailure sends a non-200 answer as an error event.
func (w *wsWriter) sendFailure() bool {
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(w.body, &body) != nil || len(body.Error) == 0 {
		body.Error, _ = json.Marshal(map[string]any{"type": "server_error", "message": http.StatusText(w.status)})
	}
	ev := map[string]any{"type": "error", "status": w.status, "error": body.Error}
	if h := w.h.Get("Retry-After"); h != "" {
		ev["headers"] = map[string]string{"retry-after": h}
	}
	b, _ := json.Marshal(ev)
	return w.c.Write(w.ctx, websocket.MessageText, b) == nil
}
