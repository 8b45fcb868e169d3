package dashboard_test

import (
	"context"
	"database/sql"
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
func startGateway(t *testing.T) (url string, sqldb *sql.DB, g *gateway.Gateway, usage func() []gateway.UsageRow) {
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
	sqldb, err = gateway.OpenDB(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	led := gateway.NewLedger(sqldb)
	prov, err := llmapi.ParseProvider("anthropic")
	if err != nil {
		t.Fatal(err)
	}
	g, err = gateway.New(t.Context(), gateway.Config{DB: sqldb, Ledger: led, RetryBase: 2 * time.Millisecond, RetryCap: 10 * time.Millisecond,
		Upstreams: []gateway.Upstream{{Name: "anthropic", URL: fs.URL, Provider: prov, MaxConcurrency: 6, APIKey: "sk-real"}}})
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
	return "http://" + l.Addr().String(), sqldb, g, usage
}

func message(t *testing.T, url, agent string) {
	t.Helper()
	if code := send(t, url, agent, "sk-test"); code != http.StatusOK {
		t.Fatalf("request through the gateway: %d", code)
	}
}

// send posts a Messages request with key and returns the status.
func send(t *testing.T, url, agent, key string) int {
	t.Helper()
	body := `{"model":"claude-sonnet-4-5","max_tokens":32,"messages":[{"role":"user","content":"hello there"}]}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("X-Apiary-Agent", agent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestGatewayClient reads a real gateway, after traffic with failures, and
// checks the snapshot against the gateway's own accounts.
func TestGatewayClient(t *testing.T) {
	t.Parallel()
	url, sqldb, g, usage := startGateway(t)
	for i := range 12 {
		message(t, url, []string{"alice", "bob", "carol"}[i%3])
	}
	// Two refusals the gateway answers itself: a key it does not know, and
	// a key whose budget (one micro-dollar) cannot cover a request.
	if code := send(t, url, "mallory", gateway.VirtualKeyPrefix+"nosuchkey"); code != http.StatusUnauthorized {
		t.Fatalf("an unknown key: %d, want 401", code)
	}
	secret, key, err := gateway.CreateKey(t.Context(), sqldb, "frugal", 1, 0, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if code := send(t, url, "frugal", secret); code != http.StatusPaymentRequired {
		t.Fatalf("an exhausted key: %d, want 402", code)
	}
	// A request's answer reaches the client before the gateway settles it:
	// read until all fourteen are settled.
	var snap dashboard.GatewaySnapshot
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		snap, err = (&dashboard.GatewayClient{URL: url}).Gateway(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if u := snap.Upstreams; len(u) == 1 && u[0].Requests+u[0].Refusals[dashboard.RefuseKey]+u[0].Refusals[dashboard.RefuseBudget] == 14 && u[0].InFlight == 0 && snap.ClientInFlight == 0 || time.Now().After(deadline) {
			break
		}
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
	if u.Refusals[dashboard.RefuseKey] != 1 || u.Refusals[dashboard.RefuseBudget] != 1 || len(u.Refusals) != 2 {
		t.Errorf("refusals %v: want one bad key and one budget", u.Refusals)
	}
	var bud *dashboard.Budget
	for i := range snap.Budgets {
		if snap.Budgets[i].Key == key.ID && snap.Budgets[i].Unit == "usd" {
			bud = &snap.Budgets[i]
		}
	}
	if bud == nil || bud.Limit != 1 || bud.Remaining != 1 {
		t.Errorf("budgets %+v: want key %s's, 1 micro-dollar left", snap.Budgets, key.ID)
	}
	if snap.ClientInFlight != 0 || snap.Waiting != 0 {
		t.Errorf("an idle gateway has %d client requests in flight, %d waiting", snap.ClientInFlight, snap.Waiting)
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
		if n == 14 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	spent := rows[:0]
	for _, r := range rows {
		if r.Errors < r.Requests { // the refusals spent nothing
			spent = append(spent, r)
		}
	}
	if len(snap.Agents) != 3 || len(spent) != 3 {
		t.Fatalf("agents %+v, ledger %+v", snap.Agents, rows)
	}
	for _, r := range spent {
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
	for _, want := range []string{`data-name="concurrency limit"`, `data-name="in flight"`, `data-name="queued for a slot"`, `data-name="waiting on a rate window"`, "axis-label", "time ("} {
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
