package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestStreamNotify: a stream sends every topic at once, then only what
// changed, as soon as Notify is called (the interval is an hour, so only
// Notify can wake it).
func TestStreamNotify(t *testing.T) {
	t.Parallel()
	m := newMem()
	m.runs = []RunSummary{{ID: "run-1", Status: StatusRunning}}
	m.run["run-1"] = sampleRun()
	m.task["run-1/b"] = &TaskDetail{Run: "run-1", Task: Task{ID: "b", Status: StatusRunning}}
	s, hs := newTestServer(t, m)
	st := openStream(t, hs.URL+"/api/stream?run=run-1&task=b")
	seen := map[string]string{}
	for len(seen) < 7 {
		ev := st.next(t)
		if _, dup := seen[ev.name]; dup {
			t.Fatalf("topic %s sent twice before anything changed", ev.name)
		}
		seen[ev.name] = ev.data
	}
	var run Run
	if err := json.Unmarshal([]byte(seen[TopicRun]), &run); err != nil || run.Graph == nil {
		t.Fatalf("run topic %s: %v", seen[TopicRun], err)
	}
	if !strings.Contains(seen[TopicEscrow], "[]") || !strings.Contains(seen[TopicGateway], `"connected":true`) {
		t.Errorf("escrow %s gateway %s", seen[TopicEscrow], seen[TopicGateway])
	}
	// b finishes: only the run and task topics change.
	m.mu.Lock()
	m.run["run-1"].Tasks[1].Status = StatusSucceeded
	m.task["run-1/b"].Task.Status = StatusSucceeded
	m.mu.Unlock()
	s.Notify()
	got := map[string]bool{}
	for len(got) < 2 {
		ev := st.next(t)
		if ev.name != TopicRun && ev.name != TopicTask {
			t.Fatalf("unchanged topic %s resent", ev.name)
		}
		if !strings.Contains(ev.data, `"status":"succeeded"`) {
			t.Fatalf("%s without the change: %s", ev.name, ev.data)
		}
		got[ev.name] = true
	}
}

// TestStreamPolls: without Notify, a change is picked up at the next
// interval.
func TestStreamPolls(t *testing.T) {
	t.Parallel()
	m := newMem()
	s, err := New(Config{Sources: m.sources(), Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hs := startServer(t, s)
	st := openStream(t, hs.URL+"/api/stream")
	st.until(t, TopicRuns, "[]")
	m.mu.Lock()
	m.runs = []RunSummary{{ID: "run-9", Status: StatusRunning}}
	m.mu.Unlock()
	st.until(t, TopicRuns, "run-9")
}

func TestStreamErrorsAndBadQueries(t *testing.T) {
	t.Parallel()
	m := newMem()
	_, hs := newTestServer(t, m)
	st := openStream(t, hs.URL+"/api/stream?run=missing")
	ev := st.until(t, TopicRun, "error")
	if !strings.Contains(ev.data, `"code":"not_found"`) {
		t.Errorf("missing run: %s", ev.data)
	}
	for _, q := range []string{"?task=b", "?run=a%00b", "?run=r&task=" + strings.Repeat("t", 600)} {
		if st, _ := get(t, hs.URL+"/api/stream"+q, nil); st != 400 {
			t.Errorf("stream%s = %d, want 400", q, st)
		}
	}
}

// flakyGateway fails its reads when told to.
type flakyGateway struct {
	mu    sync.Mutex
	n     int
	fails bool
}

func (g *flakyGateway) Gateway(context.Context) (GatewaySnapshot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	if g.fails {
		return GatewaySnapshot{}, errors.New("connection refused")
	}
	return GatewaySnapshot{Upstreams: []Upstream{{Name: "anthropic", InFlight: g.n % 3, ConcurrencyLimit: 10 + g.n, Breaker: "closed"}}}, nil
}

// TestSampler: under a fake clock, Run samples every SampleEvery, keeps
// the newest HistoryLen points and records a failed read without losing
// the history.
func TestSampler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := &flakyGateway{}
		s, err := New(Config{Sources: Sources{Gateway: g}, SampleEvery: time.Second, HistoryLen: 5})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			s.Run(ctx)
			close(done)
		}()
		time.Sleep(7*time.Second + time.Millisecond)
		synctest.Wait()
		v := s.gatewayView()
		h := v.History["anthropic"]
		if len(h) != 5 || h[0].Limit != 14 || h[4].Limit != 18 {
			t.Fatalf("history %+v: want the newest 5 of 8 samples", h)
		}
		for i := 1; i < len(h); i++ {
			if d := h[i].Time.Sub(h[i-1].Time); d != time.Second {
				t.Errorf("samples %v apart, want 1s", d)
			}
		}
		if v.Snapshot == nil || !v.Snapshot.Time.Equal(h[4].Time) || v.Error != "" {
			t.Errorf("snapshot %+v error %q", v.Snapshot, v.Error)
		}
		g.mu.Lock()
		g.fails = true
		g.mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		v = s.gatewayView()
		if v.Error != "connection refused" || len(v.History["anthropic"]) != 5 || v.Snapshot == nil {
			t.Errorf("after a failed read: error %q, %d samples, snapshot %v", v.Error, len(v.History["anthropic"]), v.Snapshot)
		}
		cancel()
		<-done
	})
}

// TestServeStops: Serve returns when its context ends, even with a stream
// open, and releases the listener.
func TestServeStops(t *testing.T) {
	t.Parallel()
	m := newMem()
	s, err := New(Config{Sources: m.sources(), SampleEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ctx, l) }()
	st := openStream(t, fmt.Sprintf("http://%s/api/stream", l.Addr()))
	st.until(t, TopicGateway, `"snapshot"`)
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts after Serve returned")
	}
}

// TestStreamEnd: when the server stops (its run ended), an open stream
// gets the last state, then the end event, then closes: the page keeps
// what it shows instead of reconnecting.
func TestStreamEnd(t *testing.T) {
	t.Parallel()
	m := newMem()
	m.runs = []RunSummary{{ID: "run-1", Status: StatusRunning}}
	s, err := New(Config{Sources: m.sources()})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, l) }()
	st := openStream(t, "http://"+l.Addr().String()+"/api/stream")
	st.until(t, TopicRuns, "run-1")
	m.mu.Lock()
	m.runs[0].Status = StatusSucceeded
	m.mu.Unlock()
	stop()
	st.until(t, TopicRuns, `"status":"succeeded"`)
	st.until(t, TopicEnd, "stopped")
	if line, err := st.r.ReadString('\n'); err == nil && strings.TrimSpace(line) != "" {
		t.Errorf("the stream goes on after the end event: %q", line)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
