package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apiary-dev/apiary/internal/llmfake"
)

// fixedSlice is a QuotaSlice whose share the test sets.
type fixedSlice struct {
	mu     sync.Mutex
	q      Quota
	live   bool
	demand Quota
}

func (f *fixedSlice) Slice() (Quota, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.q, f.live
}

func (f *fixedSlice) SetDemand(d Quota) {
	f.mu.Lock()
	f.demand = d
	f.mu.Unlock()
}

func (f *fixedSlice) set(q Quota, live bool) {
	f.mu.Lock()
	f.q, f.live = q, live
	f.mu.Unlock()
}

// TestSliceGate: under a slice of requests and tokens that changes, no
// window-long interval holds more sends than the slice allowed, nothing is
// sent while the slice is not held, and the gate reports its demand.
func TestSliceGate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const window = time.Second
		q := &fixedSlice{q: Quota{Requests: 5, Tokens: -1}, live: true}
		g := &sliceGate{name: "up", q: ClusterQuota{Slice: q}, window: window, now: time.Now}
		var mu sync.Mutex
		var sends []time.Time
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for ctx.Err() == nil {
					if g.acquire(ctx, 10) != nil {
						return
					}
					mu.Lock()
					sends = append(sends, time.Now())
					mu.Unlock()
				}
			})
		}
		time.Sleep(3 * window)
		synctest.Wait()
		if d := q.demand; d.Requests < 5 {
			t.Errorf("demand %+v while 8 senders wait; want at least the slice", d)
		}
		// Shrink: from now on at most 2 per window (after a window).
		synctest.Wait()
		q.set(Quota{Requests: 2, Tokens: -1}, true)
		shrunk := time.Now()
		time.Sleep(3 * window)
		// Lost lease: nothing at all.
		synctest.Wait()
		q.set(Quota{Requests: 100, Tokens: -1}, false)
		lost := time.Now()
		time.Sleep(2 * window)
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		count := func(from, to time.Time) int {
			n := 0
			for _, s := range sends {
				if !s.Before(from) && s.Before(to) {
					n++
				}
			}
			return n
		}
		for _, s := range sends {
			limit := 5
			if s.After(shrunk.Add(window)) {
				limit = 2
			}
			if n := count(s, s.Add(window)); n > limit && s.Add(window).Before(lost) {
				t.Fatalf("%d sends in the window from %v; slice %d", n, s, limit)
			}
		}
		if n := count(lost.Add(time.Nanosecond), lost.Add(10*window)); n != 0 {
			t.Fatalf("%d sends without a live slice", n)
		}
		if n := count(shrunk.Add(window), lost); n < 3 {
			t.Fatalf("only %d sends under the shrunk slice: the gate starves", n)
		}
	})
}

// TestSliceGateTokens: a token slice admits requests by their cost.
func TestSliceGateTokens(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := &fixedSlice{q: Quota{Requests: -1, Tokens: 100}, live: true}
		g := &sliceGate{name: "up", q: ClusterQuota{Slice: q}, window: time.Second, now: time.Now}
		start := time.Now()
		var at []time.Duration
		for range 4 {
			if err := g.acquire(t.Context(), 40); err != nil {
				t.Fatal(err)
			}
			at = append(at, time.Since(start))
		}
		// 40+40 fit the first window; the third waits for the first to leave.
		if !slices.Equal(at, []time.Duration{0, 0, time.Second, time.Second}) {
			t.Fatalf("sends at %v", at)
		}
	})
}

// TestClusterGateways: two gateways in front of one llmfake account, each
// with half its request limit as a slice, under load from many agents:
// llmfake's per-window counts never exceed the limit and it refuses
// nothing, and /_apiary/cluster reports the slices.
func TestClusterGateways(t *testing.T) {
	t.Parallel()
	// Windows of 2 s: the slices are counted when a gateway sends and the
	// windows when llmfake receives, so scheduling delays on a loaded
	// machine must stay small against the window.
	const limit, window = 20, 2 * time.Second
	srv, url := fake(t, fakeLimits(limit, window))
	var gws []*testGateway
	for range 2 {
		q := &fixedSlice{q: Quota{Requests: limit / 2, Tokens: -1}, live: true}
		gws = append(gws, start(t, Config{Upstreams: []Upstream{{Name: "anthropic", URL: url, Window: window}},
			Quotas: map[string]ClusterQuota{"anthropic": {Slice: q, Window: window}}, NoRateLimit: true}))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*window)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 16 {
		gw := gws[i%2]
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/v1/messages",
					strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`))
				req.Header.Set("x-api-key", "k")
				req.Header.Set("anthropic-version", "2023-06-01")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	st := srv.Stats()
	total := int64(0)
	for _, ks := range st.Keys {
		for _, w := range ks.Windows {
			if w.Requests > limit {
				t.Errorf("window %d: %d requests over the limit %d", w.Index, w.Requests, limit)
			}
			total += w.Requests
		}
		if ks.RateLimited > 0 {
			t.Errorf("llmfake refused %d requests", ks.RateLimited)
		}
	}
	if total < limit {
		t.Errorf("only %d requests in total", total)
	}
	resp, err := http.Get(gws[0].URL + "/_apiary/cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cs []ClusterStats
	if err := json.NewDecoder(resp.Body).Decode(&cs); err != nil || len(cs) != 1 || cs[0].Slice.Requests != limit/2 || cs[0].Sent == 0 || cs[0].Waited == 0 {
		t.Fatalf("/_apiary/cluster = %+v, %v", cs, err)
	}
}

// fakeLimits is an llmfake account with limit requests per window.
func fakeLimits(limit int64, window time.Duration) llmfake.Config {
	return llmfake.Config{Limits: llmfake.Limits{RPM: limit, WindowLength: window}}
}
