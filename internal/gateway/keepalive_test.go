package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// A stream whose pacing wait was projected within the clients' patience,
// but that is still queued after half of it, is kept alive from that moment:
// the status line and a ping at half the patience, a ping every KeepAlive,
// then the real stream. One that is granted before half the patience gets
// no keep-alive at all. The gateway, llmfake and the client run in one
// synctest bubble, in virtual time.
func TestStreamKeptAliveAtHalfPatience(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		patience time.Duration
		kept     bool
	}{
		// llmfake's window of one request lasts 10 s; the stream waits for
		// the next one, about 10 s.
		{"kept from half the patience", 12 * time.Second, true},
		{"granted before half the patience", 30 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				fs, err := llmfake.New(llmfake.Config{Format: llmfake.FormatAnthropic,
					Limits: llmfake.Limits{RPM: 1, WindowLength: 10 * time.Second}}, llmfake.Options{Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				g, err := New(context.Background(), Config{
					Upstreams:      []Upstream{{Name: "a", URL: "http://llmfake.invalid", Provider: llmapi.Anthropic}},
					Transport:      handlerTransport{fs},
					ClientPatience: tc.patience, KeepAlive: time.Second,
				})
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				// The first request spends the window and teaches its end.
				if w := serveOnce(g, false); w.status() != 200 {
					t.Fatalf("first request: %d %s", w.status(), w.body())
				}
				t0 := time.Now()
				w := serveOnce(g, true)
				body := w.body()
				if w.status() != 200 || !strings.Contains(body, "event: message_stop") {
					t.Fatalf("stream: %d %s", w.status(), body)
				}
				pings := strings.Count(body[:strings.Index(body, "event: message_start")], "event: ping")
				first := w.firstWrite().Sub(t0)
				if tc.kept {
					// Kept alive at half the patience; pinged each second
					// until the window turned, about 10 s in.
					if first != tc.patience/2 || pings < 4 {
						t.Errorf("first bytes after %v, %d pings before the stream: want %v and at least 4", first, pings, tc.patience/2)
					}
					return
				}
				if pings > 0 || first < 9*time.Second {
					t.Errorf("first bytes after %v, %d pings: want the stream itself after the wait", first, pings)
				}
			})
		})
	}
}

// serveOnce sends one Messages request through g, in process, and returns
// what the client received.
func serveOnce(g *Gateway, stream bool) *recorder {
	body := `{"model":"claude-sonnet-4-5","max_tokens":20,"stream":false,"messages":[{"role":"user","content":"hi"}]}`
	if stream {
		body = strings.Replace(body, `"stream":false`, `"stream":true`, 1)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://gateway.invalid/v1/messages", strings.NewReader(body))
	req.Header.Set("X-Api-Key", "k")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	w := &recorder{h: http.Header{}}
	g.ServeHTTP(w, req)
	return w
}

// recorder is a client's view of a response: the status, the bytes, and
// when the first of them came (virtual time under synctest).
type recorder struct {
	mu    sync.Mutex
	h     http.Header
	code  int
	buf   bytes.Buffer
	first time.Time
}

func (r *recorder) Header() http.Header { return r.h }

func (r *recorder) WriteHeader(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.code == 0 {
		r.code = code
		r.first = time.Now()
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

func (r *recorder) Flush() {}

func (r *recorder) status() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.code
}

func (r *recorder) body() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

func (r *recorder) firstWrite() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first
}

// handlerTransport sends requests to an in-process handler: the response
// is returned once the handler writes its status, and its body streams
// through a pipe as the handler writes it.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	w := &pipeWriter{h: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			w.WriteHeader(http.StatusOK)
			_ = pw.Close()
		}()
		t.h.ServeHTTP(w, req)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		_ = pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: w.code, Status: http.StatusText(w.code), Header: w.sent, Body: pr,
		ContentLength: -1, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: req}, nil
}

type pipeWriter struct {
	h     http.Header
	sent  http.Header
	pw    *io.PipeWriter
	once  sync.Once
	code  int
	ready chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.h }

func (w *pipeWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.code, w.sent = code, w.h.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

func (w *pipeWriter) Flush() {}
