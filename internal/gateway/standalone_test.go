package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
)

// TestStandalone: a gateway over a ledger file answers on the listener
// ServeUntil serves until its context ends; a ledger holding an active
// virtual key makes a gateway without a real key refuse to start.
func TestStandalone(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	cfg := Config{Upstreams: []Upstream{{Name: "a", URL: "http://127.0.0.1:1", Provider: llmapi.Anthropic}}}
	g, closeAll, err := Standalone(t.Context(), cfg, path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ServeUntil(ctx, l, g) }()
	resp, err := http.Get("http://" + l.Addr().String() + "/_apiary/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("health: %s", resp.Status)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeUntil: %v", err)
	}
	if err := closeAll(); err != nil {
		t.Fatal(err)
	}

	db, err := OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := CreateKey(t.Context(), db, "alice", 0, 0, 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, _, err := Standalone(t.Context(), cfg, path); !errors.Is(err, ErrNoAPIKey) {
		t.Errorf("with a virtual key and no real key: %v, want ErrNoAPIKey", err)
	}
}
