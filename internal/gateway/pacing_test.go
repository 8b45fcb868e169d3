package gateway

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/sched"
)

// The pacer learns a window's period from the headers as each provider
// writes them (Anthropic: RFC 3339 resets truncated to the second; OpenAI:
// delays such as "6.5s"), parsed by llmapi as the gateway does, and never
// configured: after a few windows it reports the server's period, learned,
// and no request it lets go outside a probe is refused.
func TestPacerLearnsPeriodFromHeaders(t *testing.T) {
	t.Parallel()
	for _, p := range []llmapi.Provider{llmapi.Anthropic, llmapi.OpenAI} {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				const limit = 4
				period := 13 * time.Second
				phase := time.Now().Add(420*time.Millisecond - period)
				win := func(at time.Time) int64 { return int64(math.Floor(float64(at.Sub(phase)) / float64(period))) }
				var mu sync.Mutex
				counts := map[int64]int{}
				refused := 0
				header := func(at time.Time, w int64) http.Header {
					end := phase.Add(time.Duration(w+1) * period)
					rem := strconv.Itoa(limit - counts[w])
					h := http.Header{}
					if p == llmapi.Anthropic {
						h.Set("Anthropic-Ratelimit-Requests-Limit", strconv.Itoa(limit))
						h.Set("Anthropic-Ratelimit-Requests-Remaining", rem)
						h.Set("Anthropic-Ratelimit-Requests-Reset", end.UTC().Truncate(time.Second).Format(time.RFC3339))
					} else {
						h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(limit))
						h.Set("X-Ratelimit-Remaining-Requests", rem)
						h.Set("X-Ratelimit-Reset-Requests", end.Sub(at).Round(100*time.Millisecond).String())
					}
					return h
				}
				pacer := sched.NewPacer(sched.PacerConfig{})
				defer pacer.Close()
				done := make(chan struct{})
				for a := range 6 {
					go func() {
						defer func() { done <- struct{}{} }()
						for range 5 {
							retry := false
							for {
								g, err := pacer.Wait(context.Background(), sched.Ask{Agent: strconv.Itoa(a), Cost: sched.Cost{Requests: 1}, Retry: retry})
								if err != nil {
									t.Error(err)
									return
								}
								g.Sent(time.Now())
								time.Sleep(30 * time.Millisecond)
								at := time.Now()
								w := win(at)
								mu.Lock()
								ok := counts[w] < limit
								if ok {
									counts[w]++
								} else if !g.Probe && w != 0 {
									refused++ // the first window is the one that teaches the limit
								}
								h := header(at, w)
								mu.Unlock()
								time.Sleep(30 * time.Millisecond)
								g.Answer(time.Now(), observations(llmapi.ParseRateLimits(p, h, time.Now())), ok)
								if ok {
									break
								}
								retry = true
							}
						}
					}()
				}
				for range 6 {
					<-done
				}
				st := pacer.Stats()
				if len(st) != 1 || st[0].PeriodSource != sched.SourceLearned || st[0].Period < period-time.Second || st[0].Period > period+time.Second {
					t.Errorf("stats %+v: want the 13 s period learned", st)
				}
				mu.Lock()
				defer mu.Unlock()
				if refused > 0 {
					t.Errorf("%d requests refused after the first window", refused)
				}
			})
		})
	}
}
