package llmfake

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/sse"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg, Options{Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// do sends one request straight to the handler; hdr is name, value pairs.
func do(t testing.TB, h http.Handler, method, target, body string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// startHTTP serves s on a loopback port until the test ends.
func startHTTP(t testing.TB, s *Server) *HTTPServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := Serve(l, s)
	t.Cleanup(func() {
		if err := hs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return hs
}

// events parses a complete SSE body.
func events(t testing.TB, body string) []sse.Event {
	t.Helper()
	r := sse.NewReader(strings.NewReader(body))
	var out []sse.Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("parse stream: %v\n%s", err, body)
		}
		out = append(out, ev)
	}
}

// decode unmarshals s into a generic map.
func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return m
}

// path walks a decoded JSON value: keys for objects, ints for arrays.
func path(v any, steps ...any) any {
	for _, s := range steps {
		switch k := s.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

const anthSmall = `{"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"hello there"}]}`
