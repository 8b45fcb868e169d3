package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/sse"
)

// Resuming a broken Anthropic stream.
//
// When an upstream cuts a Messages stream after the first byte reached the
// client, a plain proxy can only end it with an error. If everything the
// client received so far is text, the gateway can instead continue it: it
// asks the upstream again with the text so far as an assistant prefill, and
// splices the continuation into the client's stream as if nothing had
// happened — the continuation's message_start is dropped, its first text
// block continues the open one, block indices are shifted, and the output
// tokens reported in message_delta include those streamed before the cut.
// Streams with tool_use or thinking blocks, or that grew past maxResumeText,
// are not resumed (a partial tool input or signature cannot be prefilled);
// they end with a terminal error frame. Every continuation costs another
// request (its input is billed again); the ledger row carries both.

// maxResumeText bounds the text kept per stream for a prefill.
const maxResumeText = 256 << 10

// maxResumes bounds the continuations of one stream.
const maxResumes = 2

// streamTracker follows an Anthropic Messages stream as the client sees it.
type streamTracker struct {
	parser    sse.Parser
	started   bool // message_start went through
	done      bool // message_stop or an error event went through
	resumable bool
	open      int // index of the open content block, -1 if none
	next      int // index the next new block would get
	text      strings.Builder
}

func newStreamTracker() *streamTracker {
	return &streamTracker{resumable: true, open: -1}
}

// feed follows the bytes the client received.
func (t *streamTracker) feed(p []byte) {
	if !t.resumable {
		return
	}
	if err := t.parser.Feed(p, t.event); err != nil {
		t.resumable = false
	}
}

func (t *streamTracker) event(ev sse.Event) {
	var e struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content_block"`
		Delta struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"delta"`
	}
	switch ev.Type {
	case "message_start":
		t.started = true
		return
	case "message_stop", "error":
		t.done = true
		return
	case "content_block_start", "content_block_delta", "content_block_stop":
	default:
		return
	}
	if json.Unmarshal([]byte(ev.Data), &e) != nil {
		t.resumable = false
		return
	}
	switch ev.Type {
	case "content_block_start":
		if e.ContentBlock.Type != "text" {
			t.resumable = false
			return
		}
		t.open, t.next = e.Index, e.Index+1
		t.text.WriteString(e.ContentBlock.Text)
	case "content_block_delta":
		if e.Delta.Type != "text_delta" {
			t.resumable = false
			return
		}
		t.text.WriteString(e.Delta.Text)
	case "content_block_stop":
		t.open = -1
	}
	if t.text.Len() > maxResumeText {
		t.resumable = false
	}
}

// prefill is the text to continue from. Anthropic rejects a prefill that
// ends in whitespace, so it is trimmed; the continuation brings it back.
func (t *streamTracker) prefill() string {
	return strings.TrimRight(t.text.String(), " \t\r\n")
}

// continuationBody appends the text so far to the request as the
// assistant's turn (or to the assistant prefill the request already ends
// with).
func continuationBody(orig []byte, prefill string) ([]byte, error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(orig, &req); err != nil {
		return nil, err
	}
	var msgs []map[string]any
	if err := json.Unmarshal(req["messages"], &msgs); err != nil {
		return nil, err
	}
	if n := len(msgs); n > 0 && msgs[n-1]["role"] == "assistant" {
		if s, ok := msgs[n-1]["content"].(string); ok {
			msgs[n-1]["content"] = strings.TrimRight(s+prefill, " \t\r\n")
		} else {
			msgs = append(msgs, map[string]any{"role": "user", "content": "Continue exactly where you stopped."},
				map[string]any{"role": "assistant", "content": prefill})
		}
	} else {
		msgs = append(msgs, map[string]any{"role": "assistant", "content": prefill})
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	req["messages"] = b
	return json.Marshal(req)
}

// splicer rewrites a continuation stream into the client's stream.
type splicer struct {
	parser sse.Parser
	open   int   // the client's open block, which the first text block continues; -1 if none
	next   int   // client index of the continuation's block 0 when none is open
	preOut int64 // output tokens streamed before the cut (estimated)
	input  llmapi.Usage
}

func (s *splicer) clientIndex(i int) int {
	if s.open >= 0 {
		return s.open + i
	}
	return s.next + i
}

// feed parses continuation bytes and appends the events to keep to out.
func (s *splicer) feed(p []byte, out []byte) ([]byte, error) {
	err := s.parser.Feed(p, func(ev sse.Event) {
		data := []byte(ev.Data)
		switch ev.Type {
		case "message_start":
			// The client already has its message; keep the usage to bill.
			if u, err := llmapi.UsageFromJSON(llmapi.Anthropic, llmapi.EndpointMessages, messageOf(data)); err == nil {
				s.input = u
			}
			return
		case "content_block_start", "content_block_delta", "content_block_stop":
			var m map[string]any
			if json.Unmarshal(data, &m) != nil {
				break
			}
			idx, _ := m["index"].(float64)
			if ev.Type == "content_block_start" && s.open >= 0 && idx == 0 {
				return // the open block goes on
			}
			m["index"] = s.clientIndex(int(idx))
			data, _ = json.Marshal(m)
		case "message_delta":
			var m map[string]any
			if json.Unmarshal(data, &m) != nil {
				break
			}
			if u, ok := m["usage"].(map[string]any); ok {
				out, _ := u["output_tokens"].(float64)
				u["output_tokens"] = int64(out) + s.preOut
			}
			data, _ = json.Marshal(m)
		}
		out = sse.AppendEvent(out, ev.Type, data)
	})
	return out, err
}

// messageOf returns the "message" member of a message_start event.
func messageOf(data []byte) []byte {
	var e struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(data, &e) != nil {
		return nil
	}
	return e.Message
}

// continuation runs the continuation request through the same admission,
// pacing, breaker and retries as any request, on behalf of call c. It
// returns the response and the sub-call holding its slot and reservation.
func (g *Gateway) continuation(ctx context.Context, c *call, body []byte) (*http.Response, *call, error) {
	c2 := &call{up: c.up, path: c.path, prov: c.prov, info: c.info, id: c.id, body: body, start: g.now(), reqID: c.reqID, traceID: c.traceID}
	u := c.up.url.JoinPath(c.path)
	c2.continued = true
	req, err := http.NewRequestWithContext(context.WithValue(ctx, callKey{}, c2), http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = c.outHeader.Clone()
	req.Header.Del("Content-Length")
	resp, err := g.roundTrip(req)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode >= 400 {
		resp.Body.Close()
		return nil, nil, io.ErrUnexpectedEOF
	}
	return resp, c2, nil
}

// release frees what a finished continuation holds.
func (g *Gateway) release(c *call, u llmapi.Usage) {
	c.ticket.Release()
	if c.streaming {
		g.metrics.inflight.WithLabelValues(c.up.name).Dec()
		c.streaming = false
	}
	if c.res != nil {
		c.res.Cancel() // answered already; a no-op then
		c.res = nil
	}
}
