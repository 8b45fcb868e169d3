package sched

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// server is a simulated rate-limited upstream: a fixed-window counter or a
// continuous token bucket, reporting limit, remaining and reset headers.
type server struct {
	mode   Refill
	limit  float64
	per    time.Duration
	offset time.Time // a window boundary (fixed window)

	count  map[int64]float64 // fixed window: tokens used per window
	bal    float64           // continuous
	at     time.Time
	primed bool
}

func (s *server) window(t time.Time) int64 {
	return int64(math.Floor(float64(t.Sub(s.offset)) / float64(s.per)))
}

// accept counts a request of cost arriving at t; it reports false when the
// server would answer 429, and otherwise the headers it sends.
func (s *server) accept(t time.Time, cost float64) (ok bool, remaining int64, reset time.Time) {
	if s.mode == Step {
		w := s.window(t)
		if s.count[w]+cost > s.limit {
			return false, 0, time.Time{}
		}
		s.count[w] += cost
		return true, int64(s.limit - s.count[w]), s.offset.Add(time.Duration(w+1) * s.per)
	}
	if !s.primed {
		s.primed, s.bal, s.at = true, s.limit, t
	}
	s.bal = min(s.limit, s.bal+s.limit*float64(t.Sub(s.at))/float64(s.per))
	s.at = t
	if s.bal+1e-6 < cost {
		return false, 0, time.Time{}
	}
	s.bal -= cost
	full := time.Duration(math.Ceil((s.limit - s.bal) * float64(s.per) / s.limit))
	return true, int64(math.Floor(s.bal)), t.Add(full)
}

// idealStep is when the last of the requests could be sent by a FIFO client
// that knew the server's fixed windows from the start.
func idealStep(offset time.Time, per time.Duration, limit float64, arrivals []time.Time, costs []float64) time.Time {
	tail, used := int64(math.MinInt64), 0.0
	var last time.Time
	for i, at := range arrivals {
		w := int64(math.Floor(float64(at.Sub(offset)) / float64(per)))
		if tail < w {
			tail, used = w, 0
		}
		if used+costs[i] > limit {
			tail, used = tail+1, 0
		}
		used += costs[i]
		last = at
		if tail != w {
			last = offset.Add(time.Duration(tail) * per)
		}
	}
	return last
}

// TestBucketAgainstServer runs a client Bucket that observes a simulated
// server's headers (random request sizes, arrival times, latencies and
// over-estimates) and checks that the server never has to refuse a request
// (the bucket stays a lower bound of the server's capacity) and that it
// stays close to the best possible schedule.
func TestBucketAgainstServer(t *testing.T) {
	t.Parallel()
	const (
		limit = 1000
		per   = 10 * time.Second
		n     = 300
	)
	type event struct {
		at       time.Time
		kind     int // 0 arrival, 1 send, 2 response
		cost     float64
		actual   float64
		reserved time.Time
		rem      int64
		rst      time.Time
		sent     time.Time
	}
	for _, mode := range []Refill{Continuous, Step} {
		for seed := range uint64(16) {
			rng := rand.New(rand.NewPCG(seed, 7+uint64(mode)))
			srv := &server{mode: mode, limit: limit, per: per, count: map[int64]float64{},
				offset: t0.Add(-time.Duration(rng.Int64N(int64(per))))}
			b := NewBucket(Rate{Limit: limit, Per: per}, mode)
			var events []event
			push := func(e event) {
				i, _ := slices.BinarySearchFunc(events, e, func(a, b event) int {
					if c := a.at.Compare(b.at); c != 0 {
						return c
					}
					return 1 // equal times: after those already queued
				})
				events = slices.Insert(events, i, e)
			}
			var arrivals []time.Time
			var costs, estimates []float64
			totalEst := 0.0
			now := t0
			for range n {
				now = now.Add(time.Duration(rng.ExpFloat64() * float64(per) / 20))
				cost := float64(1 + rng.Int64N(limit/5))
				if rng.IntN(30) == 0 && seed%4 != 3 { // a whole bucket; some runs have none
					cost = limit
				}
				actual := cost
				if seed%2 == 1 { // the estimate was too high: refunds
					actual = math.Ceil(cost * (0.5 + rng.Float64()/2))
				}
				arrivals, costs = append(arrivals, now), append(costs, actual)
				estimates, totalEst = append(estimates, cost), totalEst+cost
				push(event{at: now, kind: 0, cost: cost, actual: actual})
			}
			sent, total := 0, 0.0
			var last time.Time
			for len(events) > 0 {
				e := events[0]
				events = events[1:]
				switch e.kind {
				case 0:
					push(event{at: b.Reserve(e.at, int64(e.cost)), kind: 1, cost: e.cost, actual: e.actual, reserved: e.at})
				case 1:
					ok, rem, rst := srv.accept(e.at, e.actual)
					if !ok {
						t.Fatalf("mode %d seed %d: the server refused %v tokens at +%v (after %d sends)",
							mode, seed, e.actual, e.at.Sub(t0), sent)
					}
					sent, total, last = sent+1, total+e.actual, e.at
					lat := time.Duration(rng.Int64N(int64(3 * time.Second)))
					push(event{at: e.at.Add(lat), kind: 2, cost: e.cost, actual: e.actual, reserved: e.reserved,
						rem: rem, rst: rst, sent: e.at})
				case 2:
					b.observe(limit, e.rem, e.rst, e.sent, e.cost, -1, false)
					b.Settle(e.at, int64(e.cost), int64(e.actual), e.sent)
				}
			}
			if sent != n {
				t.Fatalf("sent %d of %d", sent, n)
			}
			took := last.Sub(t0)
			var best time.Duration
			if mode == Continuous {
				best = time.Duration((total - limit) / limit * float64(per))
			} else {
				best = idealStep(srv.offset, per, limit, arrivals, costs).Sub(t0) + per
			}
			if seed%2 == 1 {
				// With refunds the best schedule knew the actual sizes in
				// advance; ours must at least not be worse than paying the
				// estimates.
				best = time.Duration((totalEst - limit) / limit * float64(per))
				if mode == Step {
					best = idealStep(srv.offset, per, limit, arrivals, estimates).Sub(t0) + per
				}
			}
			if float64(took) > 1.05*float64(best) {
				t.Errorf("mode %d seed %d: last send at +%v; the best schedule needs +%v", mode, seed, took, best)
			}
		}
	}
}
