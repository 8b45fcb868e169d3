// Package e2e_test drives llmfake with real clients — the official
// Anthropic and OpenAI Go SDKs and the Claude Code CLI — through its
// exported API only. It lives apart from package llmfake so that the
// package's own test binary (and its fuzzers) stays small.
package e2e_test

import (
	"encoding/json"
	"net"
	"testing"

	"github.com/apiary-dev/apiary/internal/llmfake"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// defaultTokens is the output length of unscripted replies (Output's
// default mean, with no deviation).
const defaultTokens = 20

// tokensOf is llmfake's documented estimate: ceil(bytes/4).
func tokensOf(n int) int { return (n + 3) / 4 }

func newServer(t testing.TB, cfg llmfake.Config) *llmfake.Server {
	t.Helper()
	s, err := llmfake.New(cfg, llmfake.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func startHTTP(t testing.TB, s *llmfake.Server) *llmfake.HTTPServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := llmfake.Serve(l, s)
	t.Cleanup(func() {
		if err := hs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return hs
}

func scripted(t testing.TB, src string) *llmfake.Scripts {
	t.Helper()
	scs, err := llmfake.ParseScripts("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return scs
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
