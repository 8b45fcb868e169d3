package sched

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestBucketReadyAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		rate Rate
		mode Refill
		take []int64         // reservations made at t0, in order
		want []time.Duration // their ReadyAt, relative to t0
	}{
		{"continuous, 60 per minute", Rate{Limit: 60}, Continuous,
			[]int64{59, 1, 1, 1}, []time.Duration{0, 0, time.Second, 2 * time.Second}},
		{"step, 60 per minute", Rate{Limit: 60}, Step,
			[]int64{60, 1, 59, 1}, []time.Duration{0, time.Minute, time.Minute, 2 * time.Minute}},
		{"continuous, larger than the limit waits for a full bucket", Rate{Limit: 10, Per: 10 * time.Second}, Continuous,
			[]int64{5, 100, 1}, []time.Duration{0, 5 * time.Second, 96 * time.Second}},
		{"step, larger than the limit", Rate{Limit: 10, Per: time.Second}, Step,
			[]int64{100, 1}, []time.Duration{0, 10 * time.Second}},
		{"unlimited", Rate{}, Continuous,
			[]int64{1 << 40, 1 << 40}, []time.Duration{0, 0}},
		{"zero cost never waits", Rate{Limit: 1}, Continuous,
			[]int64{1, 0, 1}, []time.Duration{0, 0, time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := NewBucket(tc.rate, tc.mode)
			for i, n := range tc.take {
				if got := b.Reserve(t0, n); !got.Equal(at(tc.want[i])) {
					t.Fatalf("reservation %d of %d: ready at +%v, want +%v", i, n, got.Sub(t0), tc.want[i])
				}
			}
		})
	}
}

func TestBucketRefill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		mode  Refill
		after time.Duration
		want  float64
	}{
		{"continuous half way", Continuous, 30 * time.Second, 30},
		{"continuous caps at the limit", Continuous, 10 * time.Minute, 60},
		{"step before the boundary", Step, 59 * time.Second, 0},
		{"step at the boundary", Step, time.Minute, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := NewBucket(Rate{Limit: 60}, tc.mode)
			b.Reserve(t0, 60)
			if got := b.Stats(at(tc.after)).Available; math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("available after %v = %v, want %v", tc.after, got, tc.want)
			}
		})
	}
}

func TestBucketSettle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		mode     Refill
		reserved int64
		actual   int64
		settleAt time.Duration
		want     float64 // available right after settling
	}{
		{"unused tokens return", Continuous, 100, 40, 0, 60},
		{"extra use becomes debt", Continuous, 100, 1300, 0, -1200},
		{"cancel returns everything", Continuous, 100, 0, 0, 100},
		{"no refund across a window boundary", Step, 100, 0, time.Minute, 1000},
		{"extra use debits the new window", Step, 100, 1100, time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := NewBucket(Rate{Limit: 1000}, tc.mode)
			b.Reserve(t0, 900)
			b.Reserve(t0, tc.reserved)
			if tc.mode == Step {
				// Window 1 starts full after the boundary whatever we
				// settle: 1000 minus debt carried from window 0.
				b.Stats(at(tc.settleAt))
			}
			b.Settle(at(tc.settleAt), tc.reserved, tc.actual, t0)
			if got := b.Stats(at(tc.settleAt)).Available; got != tc.want {
				t.Fatalf("available = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBucketObserve(t *testing.T) {
	t.Parallel()
	type obs struct {
		limit, remaining int64
		reset            time.Duration // relative to t0; -1 means zero time
		now              time.Duration
	}
	for _, tc := range []struct {
		name      string
		rate      Rate
		mode      Refill
		spend     int64 // reserved at t0 before observing
		obs       obs
		checkAt   time.Duration
		wantLimit int64
		wantAvail float64
	}{
		{"remaining lowers the balance", Rate{Limit: 100}, Continuous, 10,
			obs{100, 50, 30 * time.Second, 0}, 0, 100, 50},
		{"remaining never raises it", Rate{Limit: 100}, Continuous, 90,
			obs{100, 60, 30 * time.Second, 0}, 0, 100, 10},
		{"no refill before the reset", Rate{Limit: 100}, Continuous, 90,
			obs{100, 60, 30 * time.Second, 0}, 29 * time.Second, 100, 10},
		{"full at the reset", Rate{Limit: 100}, Continuous, 90,
			obs{100, 60, 30 * time.Second, 0}, 30 * time.Second, 100, 100},
		{"step windows realign to the reset", Rate{Limit: 100}, Step, 90,
			obs{100, 5, 10 * time.Second, 0}, 9 * time.Second, 100, 5},
		{"step refills at the reset", Rate{Limit: 100}, Step, 90,
			obs{100, 5, 10 * time.Second, 0}, 10 * time.Second, 100, 100},
		{"step window after the reset", Rate{Limit: 100}, Step, 90,
			obs{100, 5, 10 * time.Second, 0}, 69 * time.Second, 100, 100},
		{"step remaining never raises it", Rate{Limit: 100}, Step, 90,
			obs{100, 50, -1, 0}, 0, 100, 10},
		{"learned lower limit wins", Rate{Limit: 100}, Continuous, 0,
			obs{40, -1, -1, 0}, 0, 40, 40},
		{"learned higher limit is ignored", Rate{Limit: 100}, Continuous, 0,
			obs{400, -1, -1, 0}, 0, 100, 100},
		{"an unlimited dimension learns its limit", Rate{}, Continuous, 0,
			obs{1000, 300, 10 * time.Second, 0}, 0, 1000, 300},
		{"a stale reset is ignored", Rate{Limit: 100}, Continuous, 0,
			obs{100, 0, -2 * time.Second, 0}, 0, 100, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := NewBucket(tc.rate, tc.mode)
			b.Reserve(t0, tc.spend)
			var reset time.Time
			if tc.obs.reset != -1 {
				reset = at(tc.obs.reset)
			}
			// The headers answer the spend itself: the server counted it.
			b.observe(tc.obs.limit, tc.obs.remaining, reset, at(tc.obs.now), float64(tc.spend), -1, false)
			s := b.Stats(at(tc.checkAt))
			if s.Limit != tc.wantLimit || math.Abs(s.Available-tc.wantAvail) > 1e-6 {
				t.Fatalf("limit %d available %v, want %d and %v", s.Limit, s.Available, tc.wantLimit, tc.wantAvail)
			}
		})
	}
}

// TestBucketObserveReadyAt: after a server says "nothing left until reset",
// a reservation is ready exactly at the reset, not earlier by our refill.
func TestBucketObserveReadyAt(t *testing.T) {
	t.Parallel()
	b := NewBucket(Rate{Limit: 60}, Continuous)
	b.Observe(60, 0, at(20*time.Second), t0)
	if got := b.Reserve(at(time.Second), 1); !got.Equal(at(20 * time.Second)) {
		t.Fatalf("ready at +%v, want +20s (the reset)", got.Sub(t0))
	}
	// A later observation at the same reset adds nothing: 59 are left at
	// the reset, the 60th must wait a second more.
	b.Observe(60, 30, at(20*time.Second), at(2*time.Second))
	if got := b.Reserve(at(3*time.Second), 59); !got.Equal(at(20 * time.Second)) {
		t.Fatalf("59 more ready at +%v, want +20s", got.Sub(t0))
	}
	if got := b.Reserve(at(3*time.Second), 1); !got.Equal(at(21 * time.Second)) {
		t.Fatalf("one more ready at +%v, want +21s", got.Sub(t0))
	}
}

// TestBucketObserveCountsUnseen: headers describe the moment their request
// was sent; what was scheduled from then on is not in remaining.
func TestBucketObserveCountsUnseen(t *testing.T) {
	t.Parallel()
	for _, mode := range []Refill{Continuous, Step} {
		b := NewBucket(Rate{Limit: 100}, mode)
		b.Reserve(t0, 10)                       // the observed request
		b.Reserve(at(time.Millisecond), 30)     // sent after it: unseen
		b.Observe(100, 90, at(time.Minute), t0) // the server saw only the first
		got := b.Stats(at(2 * time.Millisecond)).Available
		// 90 - (10 + 30): the observed request itself is counted again,
		// conservatively, because its debit is at the same instant.
		if math.Abs(got-50) > 0.01 {
			t.Fatalf("mode %d: available %v, want 50", mode, got)
		}
	}
}

func TestLimiterDimensions(t *testing.T) {
	t.Parallel()
	l := NewLimiter(LimiterConfig{
		Requests: Rate{Limit: 100},
		Input:    Rate{Limit: 1000},
		Output:   Rate{Limit: 600},
		Total:    Rate{Limit: 1200},
	})
	steps := []struct {
		cost Cost
		want time.Duration
	}{
		{Cost{1, 800, 100}, 0},
		{Cost{1, 100, 100}, 0},
		{Cost{1, 100, 0}, 0},                // input is now exactly 0 left
		{Cost{1, 0, 300}, 15 * time.Second}, // total tokens: none left, needs 300 at 20/s
		{Cost{1, 100, 0}, 20 * time.Second}, // total: 300 in debt, then 100 more at 20/s
	}
	for i, s := range steps {
		r := l.Reserve(t0, s.cost)
		if !r.ReadyAt.Equal(at(s.want)) {
			t.Fatalf("step %d %+v: ready at +%v, want +%v", i, s.cost, r.ReadyAt.Sub(t0), s.want)
		}
	}
	// Every dimension is debited when the request really goes: the last
	// two requests at +15s and +20s, when the requests bucket is full again.
	if got := l.Stats(Requests, at(20*time.Second)).Available; got != 99 {
		t.Fatalf("requests available at +20s = %v, want 99", got)
	}
	if l.Stats(AllDims, t0) != (BucketStats{}) {
		t.Fatal("Stats(AllDims) should be empty")
	}
}

func TestLimiterCommitCancel(t *testing.T) {
	t.Parallel()
	l := NewLimiter(LimiterConfig{Input: Rate{Limit: 1000}, Output: Rate{Limit: 1000}})
	r := l.Reserve(t0, Cost{Requests: 1, Input: 500, Output: 500})
	r.Commit(t0, Cost{Requests: 1, Input: 700, Output: 100})
	r.Commit(t0, Cost{Requests: 1, Input: 5000}) // ignored: already settled
	if in, out := l.Stats(InputTokens, t0).Available, l.Stats(OutputTokens, t0).Available; in != 300 || out != 900 {
		t.Fatalf("after commit: input %v output %v, want 300 and 900", in, out)
	}
	c := l.Reserve(t0, Cost{Input: 300})
	c.Cancel(t0)
	c.Cancel(t0)
	if in := l.Stats(InputTokens, t0).Available; in != 300 {
		t.Fatalf("after cancel: input %v, want 300", in)
	}
	var zero Reservation
	zero.Commit(t0, Cost{}) // a zero Reservation is inert
}

// TestReservationObserve: headers read through the reservation know that
// the server had counted the request itself, so they cost nothing more.
func TestReservationObserve(t *testing.T) {
	t.Parallel()
	l := NewLimiter(LimiterConfig{Input: Rate{Limit: 1000}})
	r := l.Reserve(t0, Cost{Requests: 1, Input: 300})
	r.Observe(InputTokens, 1000, 700, at(18*time.Second))
	if got := l.Stats(InputTokens, t0).Available; got != 700 {
		t.Fatalf("available %v, want 700", got)
	}
	// The same headers through Limiter.Observe count the request again.
	l2 := NewLimiter(LimiterConfig{Input: Rate{Limit: 1000}})
	r2 := l2.Reserve(t0, Cost{Requests: 1, Input: 300})
	l2.Observe(InputTokens, 1000, 700, at(18*time.Second), r2.ReadyAt)
	if got := l2.Stats(InputTokens, t0).Available; got != 400 {
		t.Fatalf("available %v, want 400", got)
	}
	// A server that says less than we think lowers the balance; the
	// output tokens it learns are a new limit.
	r3 := l.Reserve(at(time.Second), Cost{Requests: 1, Input: 100})
	r3.Observe(InputTokens, 1000, 200, at(time.Minute))
	r3.Observe(OutputTokens, 5000, 4000, at(time.Minute))
	if in, out := l.Stats(InputTokens, at(time.Second)), l.Stats(OutputTokens, at(time.Second)); in.Available != 200 || out.Limit != 5000 || out.Available != 4000 {
		t.Fatalf("input %+v output %+v", in, out)
	}
	// Output tokens are adjusted at the end: what was reserved beyond the
	// actual comes back.
	r4 := l.Reserve(t0, Cost{Requests: 1, Output: 1000})
	r4.Commit(at(time.Second), Cost{Requests: 1, Output: 100})
	if out := l.Stats(OutputTokens, at(time.Second)).Available; out < 3900 || out > 3990 {
		t.Fatalf("output available %v after commit, want about 3900 plus a second of refill", out)
	}
}

func TestLimiterPauseAndWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(LimiterConfig{Requests: Rate{Limit: 60}})
		start := time.Now()
		early := l.Reserve(start, Cost{Requests: 1})
		if !early.ReadyAt.Equal(start) {
			t.Fatalf("first reservation not ready at once")
		}
		// A 429 arrives after the reservation was made: Wait must honour it.
		l.PauseUntil(InputTokens, start.Add(7*time.Second))
		if err := l.Wait(t.Context(), early); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 7*time.Second {
			t.Fatalf("Wait returned after %v, want 7s (the pause)", waited)
		}
		later := l.Reserve(time.Now(), Cost{Requests: 1})
		if !later.ReadyAt.Equal(time.Now()) {
			t.Fatalf("reservation after the pause ready at %v", later.ReadyAt.Sub(start))
		}
		l.PauseUntil(AllDims, time.Now().Add(time.Hour))
		l.PauseUntil(Requests, time.Now()) // pauses only lengthen
		r := l.Reserve(time.Now(), Cost{})
		if got := time.Until(r.ReadyAt); got != time.Hour {
			t.Fatalf("paused reservation ready in %v, want 1h", got)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := l.Wait(ctx, r); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v, want deadline exceeded", err)
		}
		r.Cancel(time.Now())
	})
}

func TestLimiterWaitPaces(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(LimiterConfig{Requests: Rate{Limit: 2, Per: time.Second}})
		start := time.Now()
		var sent []time.Duration
		for range 6 {
			r := l.Reserve(time.Now(), Cost{Requests: 1})
			if err := l.Wait(t.Context(), r); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, time.Since(start))
			r.Commit(time.Now(), Cost{Requests: 1})
		}
		want := []time.Duration{0, 0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second}
		if !slices.Equal(sent, want) {
			t.Fatalf("sent at %v, want %v", sent, want)
		}
	})
}

// TestLimiterNeverOverAdmits is a property test in simulated time: requests
// of random size arrive at random times and are sent at their ReadyAt. A
// continuous bucket must never send more than limit + rate*span in any span
// (the token-bucket bound, as the server enforces it); a step bucket never
// more than limit in one window.
func TestLimiterNeverOverAdmits(t *testing.T) {
	t.Parallel()
	const limit, per = 1000, time.Minute
	for _, mode := range []Refill{Continuous, Step} {
		for seed := range uint64(8) {
			rng := rand.New(rand.NewPCG(seed, uint64(mode)))
			b := NewBucket(Rate{Limit: limit, Per: per}, mode)
			var epoch time.Time
			type send struct {
				at   time.Time
				cost int64
			}
			var sends []send
			now := t0
			for range 400 {
				now = now.Add(time.Duration(rng.Int64N(int64(2 * time.Second))))
				if len(sends) == 0 {
					epoch = now // a Step bucket's windows start at its first use
				}
				cost := 1 + rng.Int64N(limit/4)
				if rng.IntN(20) == 0 {
					cost = limit // the largest request allowed
				}
				sends = append(sends, send{b.Reserve(now, cost), cost})
			}
			slices.SortStableFunc(sends, func(a, b send) int { return a.at.Compare(b.at) })
			for i := range sends {
				var sum int64
				for j := i; j < len(sends); j++ {
					sum += sends[j].cost
					span := sends[j].at.Sub(sends[i].at)
					var bound float64
					if mode == Continuous {
						bound = limit + limit*span.Seconds()/per.Seconds()
					} else {
						if sends[i].at.Sub(epoch)/per != sends[j].at.Sub(epoch)/per {
							break
						}
						bound = limit
					}
					if float64(sum) > bound+1e-6 {
						t.Fatalf("mode %d seed %d: %d tokens sent in %v from %v, bound %v",
							mode, seed, sum, span, sends[i].at.Sub(t0), bound)
					}
				}
			}
		}
	}
}

// FuzzBucket drives a Bucket with arbitrary operations and checks its
// invariants: the balance never exceeds the limit, a reservation is never
// ready before it was made, and between settlements and observations
// reservations (of any size above zero) are ready in the order made.
func FuzzBucket(f *testing.F) {
	f.Add([]byte{0, 10, 1, 200, 2, 3, 4, 0, 5, 9, 3, 1})
	f.Add([]byte{3, 50, 3, 255, 1, 1, 0, 7, 0, 7, 4, 200})
	f.Fuzz(func(t *testing.T, ops []byte) {
		b := NewBucket(Rate{Limit: 100, Per: 10 * time.Second}, Refill(len(ops)%2))
		now := t0
		var last time.Time
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%6, int64(ops[i+1])
			switch op {
			case 0:
				now = now.Add(time.Duration(arg) * 100 * time.Millisecond)
				last = time.Time{}
			case 1:
				r := b.Reserve(now, arg)
				if r.Before(now) {
					t.Fatalf("ready %v before now %v", r, now)
				}
				if arg > 0 && r.Before(last) {
					t.Fatalf("FIFO broken: ready %v before an earlier reservation's %v", r, last)
				}
				if arg > 0 {
					last = r
				}
			case 2:
				if arg%2 == 0 {
					b.Settle(now, arg, int64(ops[i]), now.Add(-time.Second))
				} else {
					b.Adjust(now, arg, int64(ops[i])%7, now.Add(-time.Second))
				}
				last = time.Time{}
			case 3:
				b.Observe(arg, int64(ops[i])-100, now.Add(time.Duration(arg)*time.Second/10), now)
				last = time.Time{}
			case 4:
				b.PauseUntil(now.Add(time.Duration(arg) * time.Millisecond))
			case 5:
				b.Reserve(now, 0)
			}
			if s := b.Stats(now); s.Limit > 0 && s.Available > float64(s.Limit)+1e-9 {
				t.Fatalf("available %v above limit %d", s.Available, s.Limit)
			}
		}
	})
}
