package llmfake

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// discardWriter is a minimal http.ResponseWriter (and Flusher) that keeps
// only the status, so the benchmarks measure the handler.
type discardWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *discardWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += len(b)
	return len(b), nil
}
func (w *discardWriter) Flush() {}

func benchHandler(b *testing.B, cfg Config, target, body string, hdr ...string) {
	s := newServer(b, cfg)
	req, _ := http.NewRequest("POST", target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		req.Body = io.NopCloser(strings.NewReader(body))
		clear(w.h)
		w.code, w.n = 0, 0
		s.ServeHTTP(w, req)
		if w.code != 200 {
			b.Fatalf("status %d", w.code)
		}
	}
}

func BenchmarkHandlerAnthropic(b *testing.B) {
	b.Run("small", func(b *testing.B) { benchHandler(b, Config{}, "/v1/messages", anthSmall, "x-api-key", "k") })
	stream := strings.Replace(anthSmall, `"max_tokens":100`, `"max_tokens":100,"stream":true`, 1)
	b.Run("stream", func(b *testing.B) { benchHandler(b, Config{}, "/v1/messages", stream, "x-api-key", "k") })
	b.Run("small limited", func(b *testing.B) {
		benchHandler(b, Config{Limits: Limits{RPM: 1 << 40, TPM: 1 << 50}}, "/v1/messages", anthSmall, "x-api-key", "k")
	})
	b.Run("scripted tool use", func(b *testing.B) {
		benchHandler(b, Config{Scripts: scripted(b, writeScript)}, "/v1/messages", anthTurn("Working directory: /w"), "x-api-key", "k")
	})
}

func BenchmarkHandlerOpenAI(b *testing.B) {
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hello there"}]}`
	b.Run("small", func(b *testing.B) {
		benchHandler(b, Config{}, "/v1/chat/completions", body, "authorization", "Bearer k")
	})
	stream := `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello there"}]}`
	b.Run("stream", func(b *testing.B) {
		benchHandler(b, Config{}, "/v1/chat/completions", stream, "authorization", "Bearer k")
	})
}
