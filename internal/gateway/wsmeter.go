package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
)

// wsMaxMessage bounds the text message a session's meter assembles, as
// the SSE parser bounds a line: an event over it stops metering.
const wsMaxMessage = 16 << 20

// wsSession is the upstream's side of a Responses WebSocket session (the
// body of its 101 answer) as the proxy copies it both ways. Writes (the
// client's frames) and Close pass through; every byte read (the server's
// frames) is handed on as it was read, after the frame reader has looked
// at it: each response the server streams — the events up to its
// response.completed, response.incomplete or response.failed — is metered
// by an llmapi.StreamMeter and recorded as a call of its own as it ends.
// A stream the frame reader cannot follow stops metering for the rest of
// the session (logged at warn); the session's row then says so.
//
// Read runs on the proxy's copying goroutine; end is called by the handler
// once the proxy is done, and may run while a last Read is still metering:
// mu orders them.
type wsSession struct {
	io.ReadWriteCloser // the upstream connection

	g    *Gateway
	c    *call              // the session; its row is the handler's
	info llmapi.RequestInfo // what each response is metered as

	mu        sync.Mutex
	frames    wsFrames
	meter     *llmapi.StreamMeter // the response in progress; nil between responses
	began     time.Time           // when its first event arrived
	responses int                 // responses recorded
	unmetered bool                // metering was given up
	ended     bool
}

func newWSSession(g *Gateway, c *call, rwc io.ReadWriteCloser) *wsSession {
	return &wsSession{ReadWriteCloser: rwc, g: g, c: c, frames: wsFrames{maxMessage: wsMaxMessage},
		info: llmapi.RequestInfo{Provider: c.prov, Endpoint: llmapi.EndpointResponses, Stream: true, Framing: llmapi.FramingSSE}}
}

// Read reads from the upstream and meters what it read. The bytes are the
// upstream's, unchanged, and metering never fails a read.
func (s *wsSession) Read(p []byte) (int, error) {
	n, err := s.ReadWriteCloser.Read(p)
	if n > 0 {
		s.observe(p[:n])
	}
	return n, err
}

// CloseWrite half-closes the upstream connection when it can, as the proxy
// does to tell the upstream the client has stopped sending.
func (s *wsSession) CloseWrite() error {
	if cw, ok := s.ReadWriteCloser.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return fmt.Errorf("gateway: upstream connection cannot half-close: %w", http.ErrNotSupported)
}

func (s *wsSession) observe(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.unmetered {
		return
	}
	if err := s.frames.feed(b, s.message); err != nil {
		s.giveUp(err.Error())
	}
}

// message meters one text message of the server's.
func (s *wsSession) message(msg []byte) {
	if s.meter == nil {
		s.meter = llmapi.NewStreamMeter(s.info)
		s.began = s.g.now()
	}
	if s.meter.FeedEvent(msg) {
		res := s.meter.Finish(true)
		s.meter = nil
		s.record(res)
	}
}

// record writes the ledger row of one response and charges its cost to the
// budgets of the session's agent and key. Its spend was not reserved (the
// gateway does not read the client's messages): what does not fit a
// budget is its overrun, and the budget is left spent, so that the key's
// next request or upgrade is refused. An error event on which no usage
// arrived and nothing was streamed (a refused response.create) is not a
// model call and leaves no row.
func (s *wsSession) record(res llmapi.StreamResult) {
	u := res.Usage
	if u.Estimated && u.TotalInput()+u.OutputTokens == 0 {
		return
	}
	s.responses++
	outcome := "ok"
	switch res.Outcome {
	case llmapi.OutcomeErrored:
		outcome = "stream_error"
	case llmapi.OutcomeTruncated:
		outcome = "truncated"
	}
	info := s.info
	info.Model = res.Model
	rc := &call{up: s.c.up, path: s.c.path, prov: s.c.prov, info: info, id: s.c.id, start: s.began,
		reqID: s.c.reqID + "." + strconv.Itoa(s.responses), traceID: s.c.traceID,
		status: http.StatusOK, outcome: outcome, attempts: 1}
	s.g.budgets.charge(s.c.id, s.g.cost(rc.prov, info.Model, u), u.TotalInput()+u.OutputTokens)
	if !u.Estimated {
		s.c.up.observeOutput(u.OutputTokens)
	}
	s.g.record(rc, u)
}

// giveUp stops metering the session; the response in progress is not
// recorded.
func (s *wsSession) giveUp(reason string) {
	s.unmetered, s.meter = true, nil
	s.g.log.Warn("websocket session not metered", "request_id", s.c.reqID, "upstream", s.c.up.name, "agent", s.c.id.agent,
		"responses_metered", s.responses, "reason", reason)
}

// end stops metering once the proxy is done with the session. A response
// still in progress (the connection closed before its terminal event) is
// recorded with what it streamed, estimated, as a cut HTTP stream is. It
// reports whether the whole session was metered.
func (s *wsSession) end() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		if s.meter != nil && !s.unmetered {
			res := s.meter.Finish(false)
			s.meter = nil
			s.record(res)
		}
	}
	return !s.unmetered
}
