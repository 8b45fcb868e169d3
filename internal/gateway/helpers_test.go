package gateway

import (
	"context"
	"database/sql"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/llmfake"
)

// fake starts llmfake with cfg on loopback.
func fake(t testing.TB, cfg llmfake.Config) (*llmfake.Server, string) {
	t.Helper()
	s, err := llmfake.New(cfg, llmfake.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := llmfake.Serve(l, s)
	t.Cleanup(func() { _ = hs.Close() })
	return s, hs.URL
}

type testGateway struct {
	*Gateway
	URL    string
	DB     *sql.DB
	Ledger *Ledger
	srv    *http.Server
}

// start runs a gateway for cfg on loopback with a ledger in a temp dir.
func start(t testing.TB, cfg Config) *testGateway {
	t.Helper()
	db, err := OpenDB(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	led := NewLedger(db)
	cfg.DB, cfg.Ledger = db, led
	if cfg.RetryBase == 0 {
		cfg.RetryBase = 5 * time.Millisecond
		cfg.RetryCap = 50 * time.Millisecond
	}
	g, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: g}
	go func() { _ = srv.Serve(l) }()
	tg := &testGateway{Gateway: g, URL: "http://" + l.Addr().String(), DB: db, Ledger: led, srv: srv}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = g.Close()
		if err := led.Close(); err != nil {
			t.Errorf("ledger: %v", err)
		}
		_ = db.Close()
	})
	return tg
}

// flush waits until the ledger holds n rows (it is written asynchronously).
func (tg *testGateway) rows(t testing.TB, n int) []Row {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows := tg.ledgerRows(t)
		if len(rows) >= n || time.Now().After(deadline) {
			return rows
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (tg *testGateway) ledgerRows(t testing.TB) []Row {
	t.Helper()
	q, err := tg.DB.Query(`SELECT agent, key_id, upstream, model, stream, status, outcome, attempts, input_tokens, output_tokens, usage_estimated, usd_micro FROM gateway_requests ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var out []Row
	for q.Next() {
		var r Row
		if err := q.Scan(&r.Agent, &r.KeyID, &r.Upstream, &r.Model, &r.Stream, &r.Status, &r.Outcome, &r.Attempts, &r.InputTokens, &r.OutputTokens, &r.Estimated, &r.MicroUSD); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func noKeepAlive(t testing.TB) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}
