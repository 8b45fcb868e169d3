package gateway

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/sse"
)

// keepAlive holds a streaming client's connection open while its request
// waits for the rate limits longer than clients are expected to wait: the
// response headers go out at once, then a keep-alive event every interval
// (Anthropic's ping; an SSE comment for the other providers' streams). The
// real stream follows them; a failure after them reaches the client as its
// provider's in-stream error, since the status is already sent.
type keepAlive struct {
	w     http.ResponseWriter
	frame []byte
	every time.Duration

	once sync.Once
	stop chan struct{}
	done chan struct{}
}

// keepAliveFrame is the provider's keep-alive event for a stream of info's
// kind, or nil when none is legal (NDJSON, JSON arrays).
func keepAliveFrame(p llmapi.Provider, info llmapi.RequestInfo) []byte {
	if !info.Stream || info.Framing != llmapi.FramingSSE {
		return nil
	}
	if p == llmapi.Anthropic {
		return appendPing(nil)
	}
	return sse.AppendComment(nil, "keep-alive")
}

// startKeepAlive begins keeping c's client alive, once; it reports whether
// the client is now kept alive.
func (g *Gateway) startKeepAlive(c *call) bool {
	if c.ka != nil {
		return true
	}
	frame := keepAliveFrame(c.prov, c.info)
	if frame == nil || c.w == nil {
		return false
	}
	fl, ok := c.w.ResponseWriter.(http.Flusher)
	if !ok {
		return false
	}
	k := &keepAlive{w: c.w.ResponseWriter, frame: frame, every: g.cfg.KeepAlive, stop: make(chan struct{}), done: make(chan struct{})}
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	c.w.ResponseWriter.WriteHeader(http.StatusOK)
	c.w.sent = true
	_, _ = k.w.Write(frame)
	fl.Flush()
	go func() {
		defer close(k.done)
		t := time.NewTicker(k.every)
		defer t.Stop()
		for {
			select {
			case <-k.stop:
				return
			case <-t.C:
				if _, err := k.w.Write(k.frame); err != nil {
					return
				}
				fl.Flush()
			}
		}
	}()
	c.ka = k
	return true
}

// halt stops the keep-alive events; the caller writes next. Safe to call
// more than once, and on nil.
func (k *keepAlive) halt() {
	if k == nil {
		return
	}
	k.once.Do(func() { close(k.stop) })
	<-k.done
}

// failInStream turns a failure answer into the provider's in-stream error,
// for a client whose status line is already sent.
func (c *call) failInStream(resp *http.Response, kind, msg string) {
	frame := llmapi.StreamErrorFrame(c.prov, c.info.Endpoint, kind, msg)
	resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
	resp.Header = http.Header{"Content-Type": {"text/event-stream"}}
	resp.Body = io.NopCloser(bytes.NewReader(frame))
	resp.ContentLength = int64(len(frame))
}

// streamKind is the error kind of an upstream failure status, for an
// in-stream error.
func streamKind(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return llmapi.KindRateLimit
	case status == 529 || status == http.StatusServiceUnavailable:
		return llmapi.KindOverloaded
	case status == http.StatusGatewayTimeout:
		return llmapi.KindTimeout
	case status >= 500:
		return llmapi.KindAPI
	}
	return llmapi.KindInvalidRequest
}

// statusOnce is the client's writer as the proxy sees it: once keep-alive
// events have sent the status line, the proxy's own WriteHeader is dropped
// (the headers are out; the body follows the events).
type statusOnce struct {
	http.ResponseWriter
	sent bool
}

func (s *statusOnce) WriteHeader(code int) {
	if !s.sent {
		s.ResponseWriter.WriteHeader(code)
	}
}

func (s *statusOnce) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusOnce) Unwrap() http.ResponseWriter { return s.ResponseWriter }
