package sched

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// outcomes records n outcomes on b at now, failing those where fail(i).
func outcomes(t *testing.T, b *Breaker, now time.Time, n int, fail func(i int) bool) {
	t.Helper()
	for i := range n {
		p, err := b.Allow(now)
		if err != nil {
			t.Fatalf("outcome %d: Allow: %v", i, err)
		}
		p.Record(now, !fail(i))
	}
}

func TestBreakerTrips(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		cfg      BreakerConfig
		n        int
		failures int
		want     State
	}{
		{"below the minimum count stays closed", BreakerConfig{MinRequests: 10}, 9, 9, Closed},
		{"at the threshold opens", BreakerConfig{MinRequests: 10, FailureRate: 0.5}, 10, 5, Open},
		{"below the threshold stays closed", BreakerConfig{MinRequests: 10, FailureRate: 0.5}, 10, 4, Closed},
		// HIVEMIND counted each failure twice as a request, so its rate
		// never passed 50%: a 0.6 threshold could only trip at 100%.
		{"a rate above one half opens", BreakerConfig{MinRequests: 10, FailureRate: 0.6}, 10, 7, Open},
		{"threshold one needs every request to fail", BreakerConfig{MinRequests: 4, FailureRate: 1}, 8, -7, Closed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := NewBreaker(tc.cfg)
			// Failures first (the count reaches the minimum on a
			// success), or with a negative count, last.
			fail := func(i int) bool { return i < tc.failures }
			if tc.failures < 0 {
				fail = func(i int) bool { return i >= tc.n+tc.failures }
			}
			outcomes(t, b, t0, tc.n, fail)
			if got := b.State(); got != tc.want {
				st := b.Stats(t0)
				t.Fatalf("state %v after %d failures of %d (window %d/%d), want %v",
					got, tc.failures, tc.n, st.Failures, st.Requests, tc.want)
			}
		})
	}
}

// TestBreakerExactlyOnce: a permit counts once, however often it is
// recorded (HIVEMIND recorded failures through two paths).
func TestBreakerExactlyOnce(t *testing.T) {
	t.Parallel()
	b := NewBreaker(BreakerConfig{MinRequests: 2, FailureRate: 0.5})
	p, err := b.Allow(t0)
	if err != nil {
		t.Fatal(err)
	}
	p.Record(t0, false)
	p.Record(t0, false)
	p.Cancel()
	if st := b.Stats(t0); st.Requests != 1 || st.Failures != 1 || st.State != Closed {
		t.Fatalf("stats %+v, want one failed request and closed", st)
	}
	var zero Permit
	zero.Record(t0, false) // a zero Permit (from a refused Allow) is inert
	zero.Cancel()
}

func TestBreakerSlidingWindow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := NewBreaker(BreakerConfig{Window: 10 * time.Second, Buckets: 10, MinRequests: 10, FailureRate: 0.5})
		outcomes(t, b, time.Now(), 8, func(int) bool { return true })
		time.Sleep(11 * time.Second) // the failures leave the window
		outcomes(t, b, time.Now(), 9, func(i int) bool { return i < 3 })
		if st := b.Stats(time.Now()); st.State != Closed || st.Requests != 9 || st.Failures != 3 {
			t.Fatalf("stats %+v, want closed with 3/9 in the window", st)
		}
		time.Sleep(5 * time.Second) // half the window: the 9 still count
		outcomes(t, b, time.Now(), 3, func(int) bool { return true })
		if st := b.Stats(time.Now()); st.State != Open {
			t.Fatalf("stats %+v, want open at 6/12", st)
		}
	})
}

func TestBreakerCycle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var changes []string
		b := NewBreaker(BreakerConfig{
			MinRequests: 4, FailureRate: 0.5, OpenFor: 5 * time.Second, MaxOpenFor: 15 * time.Second,
			OnChange: func(from, to State, at time.Time) { changes = append(changes, fmt.Sprint(from, ">", to)) },
		})
		stale, _ := b.Allow(time.Now()) // in flight across the whole cycle
		outcomes(t, b, time.Now(), 4, func(int) bool { return true })

		openedAt := time.Now()
		_, err := b.Allow(time.Now())
		var oe *OpenError
		if !errors.As(err, &oe) || !errors.Is(err, ErrOpen) || oe.State != Open || !oe.RetryAt.Equal(openedAt.Add(5*time.Second)) {
			t.Fatalf("Allow while open = %v, want *OpenError retrying at +5s", err)
		}

		// Each failed probe re-opens for twice as long, up to the cap.
		for _, wait := range []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second, 15 * time.Second} {
			time.Sleep(wait - time.Millisecond)
			if _, err := b.Allow(time.Now()); !errors.Is(err, ErrOpen) {
				t.Fatalf("Allow before the %v interval ended = %v", wait, err)
			}
			time.Sleep(time.Millisecond)
			probe, err := b.Allow(time.Now())
			if err != nil {
				t.Fatalf("no probe after %v: %v", wait, err)
			}
			if _, err := b.Allow(time.Now()); !errors.As(err, &oe) || oe.State != HalfOpen {
				t.Fatalf("second request while half-open = %v, want refused", err)
			}
			probe.Record(time.Now(), false)
		}
		time.Sleep(15 * time.Second)
		probe, err := b.Allow(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		stale.Record(time.Now(), true) // from before the open: ignored
		if b.State() != HalfOpen {
			t.Fatalf("a stale success changed the state to %v", b.State())
		}
		probe.Record(time.Now(), true)
		if st := b.Stats(time.Now()); st.State != Closed || st.Requests != 0 || st.Opens != 0 {
			t.Fatalf("after a good probe: %+v, want closed with a fresh window", st)
		}
		want := []string{"closed>open", "open>half-open", "half-open>open", "open>half-open", "half-open>open",
			"open>half-open", "half-open>open", "open>half-open", "half-open>open", "open>half-open", "half-open>closed"}
		if !slices.Equal(changes, want) {
			t.Fatalf("transitions %v\nwant %v", changes, want)
		}
	})
}

func TestBreakerProbes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := NewBreaker(BreakerConfig{MinRequests: 1, Probes: 2, OpenFor: time.Second, ProbeTimeout: 30 * time.Second})
		outcomes(t, b, time.Now(), 1, func(int) bool { return true })
		time.Sleep(time.Second)
		p1, err1 := b.Allow(time.Now())
		p2, err2 := b.Allow(time.Now())
		if _, err := b.Allow(time.Now()); err1 != nil || err2 != nil || err == nil {
			t.Fatalf("half-open with 2 probes: %v, %v, then %v; want two permits then a refusal", err1, err2, err)
		}
		// A cancelled probe frees its slot without counting.
		p2.Cancel()
		p3, err := b.Allow(time.Now())
		if err != nil {
			t.Fatalf("after a cancelled probe: %v", err)
		}
		p1.Record(time.Now(), true)
		if b.State() != HalfOpen {
			t.Fatal("one good probe of two closed the breaker")
		}
		p3.Record(time.Now(), true)
		if b.State() != Closed {
			t.Fatalf("two good probes: state %v, want closed", b.State())
		}

		// A probe that never answers (its permit lost) times out: the
		// breaker re-opens rather than stay half-open forever.
		outcomes(t, b, time.Now(), 1, func(int) bool { return true })
		time.Sleep(time.Second)
		_, _ = b.Allow(time.Now())
		_, _ = b.Allow(time.Now())
		time.Sleep(30 * time.Second)
		_, err = b.Allow(time.Now())
		var oe *OpenError
		if !errors.As(err, &oe) || oe.State != Open || b.Stats(time.Now()).Opens != 2 {
			t.Fatalf("after the probe timeout: %v (opens %d), want re-opened", err, b.Stats(time.Now()).Opens)
		}
	})
}
