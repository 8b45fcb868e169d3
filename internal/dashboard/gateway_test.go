package dashboard_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// startGateway runs a real gateway in front of llmfake (30% of the
// attempts fail with 529 or 503) on loopback.
func startGateway(t *testing.T) (url string, db *gateway.Ledger, g *gateway.Gateway, usage func() []gateway.UsageRow) {
	t.Helper()
	fake, err := llmfake.New(llmfake.Config{Faults: llmfake.Faults{ErrorRate: 0.3, ErrorStatuses: []int{529, 503}}}, llmfake.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fs := llmfake.Serve(fl, fake)
	t.Cleanup(func() { _ = fs.Close() })
	sqldb, err := gateway.OpenDB(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	led := gateway.NewLedger(sqldb)
	prov, err := llmapi.ParseProvider("anthropic")
	if err != nil {
		t.Fatal(err)
	}
	g, err = gateway.New(t.Context(), gateway.Config{DB: sqldb, Ledger: led, RetryBase: 2 * time.Millisecond, RetryCap: 10 * time.Millisecond,
		Upstreams: []gateway.Upstream{{Name: "anthropic", URL: fs.URL, Provider: prov, MaxConcurrency: 6}}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: g}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = g.Close()
		_ = led.Close()
		_ = sqldb.Close()
	})
	usage = func() []gateway.UsageRow {
		rows, err := gateway.Usage(t.Context(), sqldb, "agent")
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	return "http://" + l.Addr().String(), led, g, usage
}

func message(t *testing.T, url, agent string) {
	t.Helper()
	body := `{"model":"claude-sonnet-4-5","max_tokens":32,"messages":[{"role":"user","content":"hello there"}]}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "sk-test")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("X-Apiary-Agent", agent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("request through the gateway: %s", resp.Status)
	}
}

// TestGatewayClient reads a real gateway, after traffic with failures, and
// checks the snapshot against the gateway's own accounts.
func TestGatewayClient(t *testing.T) {
	t.Parallel()
	url, _, g, usage := startGateway(t)
	for i := range 12 {
		message(t, url, []string{"alice", "bob", "carol"}[i%3])
	}
	snap, err := (&dashboard.GatewayClient{URL: url}).Gateway(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Upstreams) != 1 {
		t.Fatalf("upstreams %+v", snap.Upstreams)
	}
	u := snap.Upstreams[0]
	st := g.Stats().Upstreams[0]
	if u.Name != "anthropic" || u.ConcurrencyLimit != st.ConcurrencyLimit || u.Breaker != st.Breaker || u.InFlight != 0 {
		t.Errorf("upstream %+v, gateway says %+v", u, st)
	}
	t.Logf("upstream %+v", u)
	if u.Requests != 12 || u.Status5xx == 0 || u.Retries != u.Status429+u.Status5xx {
		t.Errorf("upstream counts %+v: want 12 requests and a retry for each 429/529", u)
	}
	// Tokens and dollars per agent agree with the ledger (written
	// asynchronously: wait for all 12 rows).
	deadline := time.Now().Add(10 * time.Second)
	var rows []gateway.UsageRow
	for {
		rows = usage()
		n := int64(0)
		for _, r := range rows {
			n += r.Requests
		}
		if n == 12 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(snap.Agents) != 3 || len(rows) != 3 {
		t.Fatalf("agents %+v, ledger %+v", snap.Agents, rows)
	}
	for _, r := range rows {
		var a *dashboard.AgentSpend
		for i := range snap.Agents {
			if snap.Agents[i].Agent == r.Group {
				a = &snap.Agents[i]
			}
		}
		if a == nil || a.InputTokens != r.InputTokens || a.OutputTokens != r.OutputTokens || a.InputTokens == 0 {
			t.Errorf("agent %s: dashboard %+v, ledger %+v", r.Group, a, r)
		}
	}
	// The dashboard serves it, and draws its history with internal/plot.
	s, err := dashboard.New(dashboard.Config{Sources: dashboard.Sources{Gateway: &dashboard.GatewayClient{URL: url}}, SampleEvery: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s.Handler()}
	go func() { _ = hs.Serve(l) }()
	defer hs.Close()
	base := "http://" + l.Addr().String()
	var view dashboard.GatewayView
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := http.Get(base + "/api/gateway")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&view)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(view.History["anthropic"]) >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !view.Connected || view.Snapshot == nil || len(view.History["anthropic"]) < 3 {
		t.Fatalf("gateway view %+v", view)
	}
	resp, err := http.Get(base + "/api/gateway/chart.svg?upstream=anthropic")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var svg strings.Builder
	_, _ = svgCopy(&svg, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("chart: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{`data-name="concurrency limit"`, `data-name="in flight"`, `data-name="queued"`, "axis-label"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("chart lacks %s", want)
		}
	}
}

func svgCopy(b *strings.Builder, resp *http.Response) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := resp.Body.Read(buf)
		b.Write(buf[:k])
		n += int64(k)
		if err != nil {
			return n, nil
		}
	}
}

func TestGatewayClientErrors(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	for _, u := range []string{"", "http://" + addr, "http://%zz"} {
		if _, err := (&dashboard.GatewayClient{URL: u}).Gateway(t.Context()); err == nil {
			t.Errorf("gateway %q: no error", u)
		}
	}
}
