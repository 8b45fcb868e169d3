package llmfake

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// hammer sends requests from many goroutines at random virtual times for
// span and returns the virtual times of the admitted ones.
func hammer(t *testing.T, s *Server, body string, workers int, span time.Duration) []time.Time {
	t.Helper()
	var mu sync.Mutex
	var admitted []time.Time
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for time.Since(start) < span {
				time.Sleep(time.Duration(rng.Int64N(int64(80 * time.Millisecond))))
				rec := do(t, s, "POST", "/v1/messages", body, "x-api-key", "k")
				switch rec.Code {
				case 200:
					mu.Lock()
					admitted = append(admitted, time.Now())
					mu.Unlock()
				case 429:
				default:
					t.Errorf("status %d", rec.Code)
				}
			}
		})
	}
	wg.Wait()
	slices.SortFunc(admitted, func(a, b time.Time) int { return a.Compare(b) })
	return admitted
}

func TestFixedWindowNeverExceeds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		limits   Limits
		body     string
		perWin   int // requests the limit admits per window
		inTokens int
	}{
		{"rpm", Limits{RPM: 5, WindowLength: time.Second}, anthSmall, 5, 3},
		// 400 chars = 100 input tokens; ITPM 350 admits 3 per window.
		{"itpm", Limits{ITPM: 350, WindowLength: time.Second},
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"` + strings.Repeat("x", 400) + `"}]}`, 3, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				s := newServer(t, Config{Limits: tt.limits})
				epoch := time.Now()
				admitted := hammer(t, s, tt.body, 20, 10*time.Second)
				perWindow := map[int64]int{}
				for _, at := range admitted {
					perWindow[int64(at.Sub(epoch)/time.Second)]++
				}
				for w, n := range perWindow {
					if n > tt.perWin {
						t.Errorf("window %d admitted %d > %d", w, n, tt.perWin)
					}
				}
				// Demand far exceeds the limit, so every window is full.
				if len(perWindow) < 10 || len(admitted) < 10*tt.perWin {
					t.Errorf("admitted %d in %d windows; the limiter is too strict", len(admitted), len(perWindow))
				}
				st := s.Stats().Keys["k"]
				for _, w := range st.Windows {
					if w.Requests > int64(tt.perWin) || w.TokensIn != w.Requests*int64(tt.inTokens) {
						t.Errorf("stats window %+v", w)
					}
					if w.Rejected == 0 && w.Index < 10 {
						t.Errorf("window %d saw no 429s under overload", w.Index)
					}
				}
			})
		})
	}
}

func TestBucketNeverExceeds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const limit = 5
		window := time.Second
		s := newServer(t, Config{Limits: Limits{RPM: limit, Window: WindowBucket, WindowLength: window}})
		admitted := hammer(t, s, anthSmall, 20, 10*time.Second)
		// A bucket admits at most capacity + refill over any interval.
		for i := range admitted {
			for j := i; j < len(admitted); j++ {
				d := admitted[j].Sub(admitted[i])
				allowed := limit + float64(limit)*float64(d)/float64(window)
				if float64(j-i+1) > allowed+1e-9 {
					t.Fatalf("%d admissions within %v, bucket allows %.2f", j-i+1, d, allowed)
				}
			}
		}
		// ~capacity + rate*10s under constant overload.
		if len(admitted) < limit+9*limit {
			t.Errorf("admitted only %d", len(admitted))
		}
	})
}

func TestRateLimitHeadersFixed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newServer(t, Config{Limits: Limits{RPM: 3, TPM: 1000}})
		epoch := time.Now()
		windowEnd := epoch.Add(time.Minute).UTC().Format(time.RFC3339)
		time.Sleep(10 * time.Second)
		for i, want := range []string{"2", "1", "0"} {
			w := do(t, s, "POST", "/v1/messages", anthSmall, "x-api-key", "k")
			h := w.Header()
			if w.Code != 200 || h.Get("anthropic-ratelimit-requests-remaining") != want || h.Get("anthropic-ratelimit-requests-limit") != "3" {
				t.Fatalf("request %d: %d remaining %q", i, w.Code, h.Get("anthropic-ratelimit-requests-remaining"))
			}
			if got := h.Get("anthropic-ratelimit-requests-reset"); got != windowEnd {
				t.Errorf("reset %q, want %q", got, windowEnd)
			}
			// Tokens: input (3) charged on admission, output (20) after.
			if got, want := h.Get("anthropic-ratelimit-tokens-remaining"), strconv.Itoa(1000-3*(i+1)-20*i); got != want {
				t.Errorf("request %d: tokens remaining %s, want %s", i, got, want)
			}
		}
		w := do(t, s, "POST", "/v1/messages", anthSmall, "x-api-key", "k")
		if w.Code != 429 || w.Header().Get("retry-after") != "50" || w.Header().Get("retry-after-ms") != "" {
			t.Fatalf("over the limit: %d retry-after %q", w.Code, w.Header().Get("retry-after"))
		}
		m := decode(t, w.Body.String())
		if path(m, "error", "type") != "rate_limit_error" || !strings.Contains(path(m, "error", "message").(string), "3 requests per minute") {
			t.Errorf("429 body %s", w.Body)
		}
		// Another key has its own limits.
		if w := do(t, s, "POST", "/v1/messages", anthSmall, "x-api-key", "other"); w.Code != 200 {
			t.Errorf("other key: %d", w.Code)
		}
		time.Sleep(50 * time.Second) // into the next window
		w = do(t, s, "POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "authorization", "Bearer k")
		h := w.Header()
		if w.Code != 200 || h.Get("x-ratelimit-remaining-requests") != "2" || h.Get("x-ratelimit-reset-requests") != "1m0s" ||
			h.Get("x-ratelimit-limit-tokens") != "1000" {
			t.Errorf("next window: %d %v", w.Code, h)
		}
		st := s.Stats()
		if k := st.Keys["k"]; k.RateLimited != 1 || k.Requests != 5 || k.ByStatus["200"] != 4 || len(k.Windows) != 2 {
			t.Errorf("stats %+v", k)
		}
	})
}

func TestRateLimitHeadersBucket(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newServer(t, Config{Limits: Limits{RPM: 60, Window: WindowBucket}})
		for range 3 {
			do(t, s, "POST", "/v1/messages", anthSmall, "x-api-key", "k")
		}
		w := do(t, s, "POST", "/v1/messages", anthSmall, "x-api-key", "k")
		if got := w.Header().Get("anthropic-ratelimit-requests-remaining"); got != "56" {
			t.Errorf("remaining %s, want 56", got)
		}
		full := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339)
		if got := w.Header().Get("anthropic-ratelimit-requests-reset"); got != full {
			t.Errorf("reset %s, want %s (bucket full again)", got, full)
		}
		time.Sleep(2 * time.Second) // refills 2
		w = do(t, s, "POST", "/v1/messages", anthSmall, "x-api-key", "k")
		if got := w.Header().Get("anthropic-ratelimit-requests-remaining"); got != "57" {
			t.Errorf("after refill remaining %s, want 57", got)
		}
	})
}

func TestRateLimitBodies(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newServer(t, Config{Limits: Limits{RPM: 1}})
		gem := `{"contents":[{"parts":[{"text":"hi"}]}]}`
		cases := []struct {
			target, body string
			check        func(w map[string]any) bool
		}{
			{"/v1beta/models/gemini-2.0-flash:generateContent", gem, func(m map[string]any) bool {
				details := path(m, "error", "details").([]any)
				retry := path(details[len(details)-1], "retryDelay")
				msg := path(m, "error", "message").(string)
				return path(m, "error", "status") == "RESOURCE_EXHAUSTED" && retry == "60s" && strings.Contains(msg, "Please retry in 60s")
			}},
			{"/api/chat", `{"model":"l","messages":[]}`, func(m map[string]any) bool { return strings.Contains(m["error"].(string), "rate limit") }},
			{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, func(m map[string]any) bool {
				return path(m, "error", "code") == "rate_limit_exceeded" && path(m, "error", "type") == "requests"
			}},
		}
		for _, c := range cases {
			key := "key-" + c.target
			do(t, s, "POST", c.target, c.body, "x-goog-api-key", key)
			w := do(t, s, "POST", c.target, c.body, "x-goog-api-key", key)
			if w.Code != 429 || !c.check(decode(t, w.Body.String())) {
				t.Errorf("%s: %d %s", c.target, w.Code, w.Body)
			}
		}
	})
}

func TestOutputLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// 20 output tokens per reply; OTPM 30: the second reply overshoots
		// (output is charged when generated), the third is rejected.
		s := newServer(t, Config{Limits: Limits{OTPM: 30}})
		codes := []int{}
		for range 3 {
			codes = append(codes, do(t, s, "POST", "/v1/messages", anthSmall, "x-api-key", "k").Code)
		}
		if !slices.Equal(codes, []int{200, 200, 429}) {
			t.Errorf("codes %v", codes)
		}
		if got := s.Stats().Keys["k"].Windows[0].TokensOut; got != 40 {
			t.Errorf("window output %d, want 40", got)
		}
	})
}

func TestTimeScale(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newServer(t, Config{TimeScale: 0.01, Limits: Limits{RPM: 1}}) // 60 s window runs in 600 ms
		do(t, s, "POST", "/v1/messages", anthSmall)
		w := do(t, s, "POST", "/v1/messages", anthSmall)
		if w.Code != 429 || w.Header().Get("retry-after-ms") != "600" || w.Header().Get("retry-after") != "1" {
			t.Fatalf("%d %v", w.Code, w.Header())
		}
		if r := w.Header().Get("anthropic-ratelimit-requests-reset"); !strings.Contains(r, ".600Z") {
			t.Errorf("reset %q lacks milliseconds", r)
		}
		time.Sleep(600 * time.Millisecond)
		if w := do(t, s, "POST", "/v1/messages", anthSmall); w.Code != 200 {
			t.Errorf("after the scaled window: %d", w.Code)
		}
	})
}
