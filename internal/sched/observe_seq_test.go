package sched

import (
	"testing"
	"time"
)

// TestReservationObserveExact: a single client whose requests the server
// counts in order must not lose capacity to its own bookkeeping. Each
// response reports exactly the requests sent so far; after n of them the
// limiter must still offer limit-n, however close together they were sent.
func TestReservationObserveExact(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewLimiter(LimiterConfig{Refill: Step})
	reset := now.Add(time.Minute)
	for i := range 40 {
		r := l.Reserve(now, Cost{Requests: 1, Input: 50, Output: 150})
		if !r.ReadyAt.Equal(now) {
			t.Fatalf("request %d delayed to %v with 50 RPM", i, r.ReadyAt.Sub(now))
		}
		r.Observe(Requests, 50, int64(49-i), reset)
		r.Commit(now, Cost{Requests: 1, Input: 50, Output: 150})
		if got := l.Stats(Requests, now).Available; got != float64(49-i) {
			t.Fatalf("after %d requests available %v, want %d", i+1, got, 49-i)
		}
		now = now.Add(10 * time.Millisecond)
	}
}

// TestReservationObserveInFlight: responses that come back out of order,
// while later requests are in flight, never make the limiter offer more than
// the server has left; when the server saw the requests in the order they
// were sent (the case on one connection pool to one server), the count stays
// exact whatever order the answers come back in.
func TestReservationObserveInFlight(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		arrival []int // the order the server saw the reservations in
		exact   bool
	}{
		{"in order", []int{0, 1, 2, 3, 4}, true},
		{"reordered", []int{3, 0, 1, 4, 2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			l := NewLimiter(LimiterConfig{Requests: Rate{Limit: 10}, Refill: Step})
			reset := now.Add(time.Minute)
			var rs []*Reservation
			for range 5 {
				r := l.Reserve(now, Cost{Requests: 1})
				rs = append(rs, &r)
			}
			// The answer to the k-th arrival says 10-k left; answers come
			// back in reverse arrival order.
			for k := len(tc.arrival) - 1; k >= 0; k-- {
				rs[tc.arrival[k]].Observe(Requests, 10, int64(10-(k+1)), reset)
				if got := l.Stats(Requests, now).Available; got > 5 {
					t.Fatalf("available %v after 5 sends of 10", got)
				}
			}
			if got := l.Stats(Requests, now).Available; tc.exact && got != 5 {
				t.Errorf("available %v, want exactly 5", got)
			}
		})
	}
}
