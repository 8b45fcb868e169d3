package gateway

import (
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// TestAblationsReallyOff: each --ablate switch turns exactly its primitive
// off; the benchmark's ablation rows mean nothing otherwise.
func TestAblationsReallyOff(t *testing.T) {
	t.Parallel()
	t.Run("retry", func(t *testing.T) {
		t.Parallel()
		_, up := fake(t, llmfake.Config{Faults: llmfake.Faults{ErrorRate: 1, ErrorStatuses: []int{502}}})
		g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic}}, NoRetry: true, NoBreaker: true})
		if st, _, _ := post(t, noKeepAlive(t), g.URL+"/v1/messages", smallBody); st != 502 {
			t.Fatalf("status %d, want the 502 passed through", st)
		}
		if r := g.rows(t, 1); r[0].Attempts != 1 {
			t.Errorf("attempts %d with retries off", r[0].Attempts)
		}
	})
	t.Run("admission", func(t *testing.T) {
		t.Parallel()
		fs, up := fake(t, llmfake.Config{Faults: llmfake.Faults{Latency: 200 * time.Millisecond}})
		g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic, MaxConcurrency: 2}}, NoAdmission: true})
		parallel(t, 8, func() { post(t, noKeepAlive(t), g.URL+"/v1/messages", smallBody) })
		if m := fs.Stats().MaxInFlight; m <= 2 {
			t.Errorf("upstream saw at most %d in flight: admission is still on", m)
		}
	})
	t.Run("admission on", func(t *testing.T) {
		t.Parallel()
		fs, up := fake(t, llmfake.Config{Faults: llmfake.Faults{Latency: 100 * time.Millisecond}})
		g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic, MaxConcurrency: 2}}})
		parallel(t, 8, func() { post(t, noKeepAlive(t), g.URL+"/v1/messages", smallBody) })
		if m := fs.Stats().MaxInFlight; m > 2 {
			t.Errorf("upstream saw %d in flight with max concurrency 2", m)
		}
	})
	t.Run("aimd", func(t *testing.T) {
		t.Parallel()
		_, up := fake(t, llmfake.Config{Faults: llmfake.Faults{ErrorRate: 1, ErrorStatuses: []int{503}}})
		for _, off := range []bool{false, true} {
			g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic, MaxConcurrency: 8}}, NoAIMD: off, NoRetry: true, NoBreaker: true})
			post(t, noKeepAlive(t), g.URL+"/v1/messages", smallBody)
			limit := g.Stats().Upstreams[0].ConcurrencyLimit
			if off && limit != 8 || !off && limit >= 8 {
				t.Errorf("NoAIMD=%v: limit %d after a 503", off, limit)
			}
		}
	})
	t.Run("ratelimit", func(t *testing.T) {
		t.Parallel()
		fs, up := fake(t, llmfake.Config{TimeScale: 0.5 / 60, Limits: llmfake.Limits{RPM: 2}})
		g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic, RPM: 2, Window: 500 * time.Millisecond}}, NoRateLimit: true, NoRetry: true})
		for range 4 {
			post(t, noKeepAlive(t), g.URL+"/v1/messages", smallBody)
		}
		if fs.Stats().Total.RateLimited == 0 {
			t.Error("no 429 with pacing off and 4 requests against 2 per window")
		}
	})
	t.Run("breaker", func(t *testing.T) {
		t.Parallel()
		fs, up := fake(t, llmfake.Config{Faults: llmfake.Faults{ErrorRate: 1, ErrorStatuses: []int{500}}})
		g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic}}, NoRetry: true, NoBreaker: true, BreakerFailFast: true, BreakerMin: 2})
		for range 6 {
			post(t, noKeepAlive(t), g.URL+"/v1/messages", smallBody)
		}
		if n := fs.Stats().Total.Requests; n != 6 {
			t.Errorf("upstream saw %d of 6 requests with the breaker off", n)
		}
		if s := g.Stats().Upstreams[0].Breaker; s != "disabled" {
			t.Errorf("breaker state %q", s)
		}
	})
}

func parallel(t *testing.T, n int, f func()) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}
	wg.Wait()
}

// TestEdgeFaultRetryKeepsPlace: attempts that failed in front of the API
// were not charged, so their retries go in the same window: ten requests
// against ten per window all succeed in the first window, with no 429.
func TestEdgeFaultRetryKeepsPlace(t *testing.T) {
	t.Parallel()
	fs, up := fake(t, llmfake.Config{TimeScale: 10.0 / 60, Limits: llmfake.Limits{RPM: 10},
		Faults: llmfake.Faults{Edge: true, ErrorRate: 0.3, ErrorStatuses: []int{502}, ResetRate: 0.1}})
	// Backoff short against the 10 s window: the test is about where the
	// retries are charged, not about how long they wait.
	// The limit is configured: learning it from the first answers counts
	// the requests then in flight conservatively, which is not under test.
	g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic, MaxConcurrency: 3, Window: 10 * time.Second, RPM: 10}},
		NoBreaker: true, MaxAttempts: 30, RetryBase: 5 * time.Millisecond, RetryCap: 20 * time.Millisecond})
	// Window 0 starts now, with the burst, however long the set-up took.
	fs.Reset()
	parallel(t, 10, func() {
		if st, body, _ := post(t, noKeepAlive(t), g.URL+"/v1/messages", smallBody); st != 200 {
			t.Errorf("status %d %s", st, body)
		}
	})
	st := fs.Stats()
	if st.Total.ServerErrors+st.Total.Resets == 0 {
		t.Fatal("no faults injected")
	}
	if st.Total.RateLimited != 0 {
		t.Errorf("%d 429s", st.Total.RateLimited)
	}
	for _, ks := range st.Keys {
		if len(ks.Windows) != 1 || ks.Windows[0].Requests != 10 {
			t.Errorf("windows %+v: all ten should be charged in the first", ks.Windows)
		}
	}
}
