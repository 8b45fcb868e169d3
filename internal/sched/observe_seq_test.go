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

// TestObserveLearnsWithRequestsInFlight: requests sent before any limit was
// known are still in flight when the first answer teaches the limit; they
// must be charged, or the first window is oversubscribed.
func TestObserveLearnsWithRequestsInFlight(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewLimiter(LimiterConfig{Refill: Step})
	var rs []*Reservation
	for range 5 {
		r := l.Reserve(now, Cost{Requests: 1})
		rs = append(rs, &r)
	}
	// The first of the five is answered: limit 10, 9 left.
	rs[0].Observe(Requests, 10, 9, now.Add(time.Minute))
	if got := l.Stats(Requests, now).Available; got != 5 {
		t.Fatalf("available %v, want 5 (10 less the 5 in flight)", got)
	}
}

// TestObserveSendOrder: requests that wait for the same window are reserved
// in one order and sent in another. Marked sent, their observations stay
// exact, so a window is filled to its limit and no further.
func TestObserveSendOrder(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewLimiter(LimiterConfig{Requests: Rate{Limit: 10}, Refill: Step})
	reset := now.Add(time.Minute)
	var rs []*Reservation
	for range 6 {
		r := l.Reserve(now, Cost{Requests: 1})
		rs = append(rs, &r)
	}
	order := []int{5, 2, 0, 4, 1, 3} // the send order
	for _, i := range order {
		rs[i].Sent()
	}
	// The server counts them in send order; answers arrive shuffled.
	for _, k := range []int{3, 0, 5, 1, 4, 2} {
		rs[order[k]].Observe(Requests, 10, int64(10-(k+1)), reset)
	}
	if got := l.Stats(Requests, now).Available; got != 4 {
		t.Errorf("available %v, want exactly 4 (10 less 6 sent)", got)
	}
	// A cancelled reservation gives its place back.
	r := l.Reserve(now, Cost{Requests: 1})
	r.Cancel(now)
	r2 := l.Reserve(now, Cost{Requests: 1})
	r2.Sent()
	r2.Observe(Requests, 10, 3, reset)
	if got := l.Stats(Requests, now).Available; got != 3 {
		t.Errorf("available %v after a cancel and one more send, want 3", got)
	}
}

// TestCancelFreesCurrentWindow: a request that was never charged (its
// connection was reset before the server counted it) gives its place back
// in the current window even after newer reservations moved on to the next,
// and a priority retry takes it at once.
func TestCancelFreesCurrentWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewLimiter(LimiterConfig{Requests: Rate{Limit: 3}, Refill: Step})
	var rs []*Reservation
	for range 3 {
		r := l.Reserve(now, Cost{Requests: 1})
		rs = append(rs, &r)
	}
	next := l.Reserve(now, Cost{Requests: 1})
	if !next.ReadyAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("fourth request ready at +%v, want the next window", next.ReadyAt.Sub(now))
	}
	rs[1].Sent()
	rs[1].Cancel(now.Add(time.Second))
	retry := l.ReservePriority(now.Add(time.Second), Cost{Requests: 1})
	if !retry.ReadyAt.Equal(now.Add(time.Second)) {
		t.Fatalf("priority retry ready at +%v, want now: the cancelled place is free", retry.ReadyAt.Sub(now))
	}
	again := l.ReservePriority(now.Add(time.Second), Cost{Requests: 1})
	if !again.ReadyAt.After(now.Add(time.Second)) {
		t.Fatal("a second priority request found room in a full window")
	}
}

// TestResendReadsFiguresFromTheRetry: a request whose first try the server
// did not charge goes again later with the same reservation; the server's
// figures in the answer to the retry already count every request sent in
// between, so they must not be taken as unseen (which would lower the
// balance by that many, for good, in a continuous bucket).
func TestResendReadsFiguresFromTheRetry(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, resend := range []bool{true, false} {
		l := NewLimiter(LimiterConfig{Requests: Rate{Limit: 10, Per: time.Minute}, Refill: Continuous})
		var rs [3]Reservation
		for i := range rs {
			rs[i] = l.Reserve(now, Cost{Requests: 1})
		}
		rs[0].Sent() // reset before the server counted it
		rs[1].Sent()
		rs[2].Sent()
		later := now.Add(time.Second)
		if resend {
			rs[0].Resend(later)
		}
		// The server counted rs[1], rs[2] and then the retry: 7 left.
		rs[0].Observe(Requests, 10, 7, time.Time{})
		got := l.Stats(Requests, later).Available
		if resend && got < 7 {
			t.Errorf("after Resend: available %.2f, want at least the server's 7", got)
		}
		if !resend && got > 5.5 {
			// Without Resend the figures read as if rs[1] and rs[2] were
			// unseen: this documents the error Resend removes.
			t.Errorf("without Resend: available %.2f, want about 5", got)
		}
	}
}
