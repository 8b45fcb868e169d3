package sched

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
)

func TestBackoffFullJitter(t *testing.T) {
	t.Parallel()
	b := &Backoff{Base: 100 * time.Millisecond, Cap: time.Second, MaxWait: time.Hour, Rand: rand.New(rand.NewPCG(1, 2))}
	for attempt, bound := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		bound *= time.Millisecond
		var lo, hi time.Duration = bound, 0
		for range 2000 {
			d, ok := b.Next(attempt, 0, 0)
			if !ok || d < 0 || d > bound {
				t.Fatalf("attempt %d: delay %v (ok %v), want within [0, %v]", attempt, d, ok, bound)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		// Full jitter spreads over the whole range, not around the bound.
		if lo > bound/20 || hi < bound*19/20 {
			t.Fatalf("attempt %d: delays spread over [%v, %v], want most of [0, %v]", attempt, lo, hi, bound)
		}
	}
}

func TestBackoffRetryAfterAndMaxWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		retryAfter time.Duration
		waited     time.Duration
		wantMin    time.Duration
		wantMax    time.Duration
		wantOK     bool
	}{
		{"retry-after plus a little jitter", 3 * time.Second, 0, 3 * time.Second, 3*time.Second + 250*time.Millisecond, true},
		{"retry-after beyond the total", 10 * time.Minute, 0, 10 * time.Minute, 10*time.Minute + 250*time.Millisecond, false},
		{"already waited nearly everything", 0, 2*time.Minute - time.Nanosecond, 0, 500 * time.Millisecond, true},
		{"already waited everything", time.Second, 2 * time.Minute, time.Second, time.Second + 250*time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b Backoff // zero value: the documented defaults
			for range 100 {
				d, ok := b.Next(0, tc.retryAfter, tc.waited)
				if d < tc.wantMin || d > tc.wantMax {
					t.Fatalf("delay %v, want within [%v, %v]", d, tc.wantMin, tc.wantMax)
				}
				if tc.name == "already waited nearly everything" {
					if ok != (tc.waited+d <= 2*time.Minute) {
						t.Fatalf("ok %v for total %v", ok, tc.waited+d)
					}
				} else if ok != tc.wantOK {
					t.Fatalf("ok %v, want %v", ok, tc.wantOK)
				}
			}
		})
	}
}

func TestBackoffDeterministic(t *testing.T) {
	t.Parallel()
	seq := func() []time.Duration {
		b := &Backoff{Rand: rand.New(rand.NewPCG(7, 7))}
		var out []time.Duration
		for i := range 10 {
			d, _ := b.Next(i, 0, 0)
			out = append(out, d)
		}
		return out
	}
	a, c := seq(), seq()
	for i := range a {
		if a[i] != c[i] {
			t.Fatalf("same seed, different delays: %v vs %v", a, c)
		}
	}
}

func TestSleep(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(t.Context(), 90*time.Second); err != nil || time.Since(start) != 90*time.Second {
			t.Fatalf("Sleep = %v after %v, want nil after 90s", err, time.Since(start))
		}
		cause := errors.New("client went away")
		ctx, cancel := context.WithCancelCause(t.Context())
		go func() {
			time.Sleep(time.Second)
			cancel(cause)
		}()
		start = time.Now()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, cause) || time.Since(start) != time.Second {
			t.Fatalf("Sleep = %v after %v, want the cause after 1s", err, time.Since(start))
		}
		if err := Sleep(ctx, 0); !errors.Is(err, cause) {
			t.Fatalf("Sleep(0) on a dead context = %v", err)
		}
		if err := Sleep(t.Context(), -time.Second); err != nil {
			t.Fatalf("Sleep(<0) = %v", err)
		}
	})
}

// TestBackoffRetryLoop runs the retry loop the gateway uses, in virtual time:
// each wait is slept holding no admission slot, and the loop gives up once
// the total wait would pass MaxWait.
func TestBackoffRetryLoop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(GateConfig{Limit: 1})
		b := &Backoff{Base: time.Second, Cap: 8 * time.Second, MaxWait: 20 * time.Second, Rand: rand.New(rand.NewPCG(3, 4))}
		start := time.Now()
		var waited time.Duration
		attempts := 0
		for {
			tk, err := g.Acquire(t.Context(), Request{Agent: "a"})
			if err != nil {
				t.Fatal(err)
			}
			attempts++ // the upstream fails every time
			tk.Release()
			d, ok := b.Next(attempts-1, 0, waited)
			if !ok {
				break
			}
			// While this request sleeps, another agent gets the slot.
			other, err := g.Acquire(t.Context(), Request{Agent: "b"})
			if err != nil {
				t.Fatalf("slot held during backoff: %v", err)
			}
			other.Release()
			if err := Sleep(t.Context(), d); err != nil {
				t.Fatal(err)
			}
			waited += d
		}
		if waited > 20*time.Second || time.Since(start) != waited || attempts < 3 {
			t.Fatalf("%d attempts, waited %v (clock %v), want several within 20s", attempts, waited, time.Since(start))
		}
	})
}
