package sched

import (
	"context"
	"sync"
	"time"
)

// Dim names one dimension of a Limiter.
type Dim uint8

// The dimensions a Limiter meters. TotalTokens is input plus output.
const (
	Requests Dim = iota
	InputTokens
	OutputTokens
	TotalTokens
	numDims

	// AllDims makes PauseUntil pause every dimension.
	AllDims Dim = 255
)

func (d Dim) String() string {
	switch d {
	case Requests:
		return "requests"
	case InputTokens:
		return "input_tokens"
	case OutputTokens:
		return "output_tokens"
	case TotalTokens:
		return "tokens"
	case AllDims:
		return "all"
	}
	return "unknown"
}

// Cost is what one request consumes.
type Cost struct {
	Requests int64
	Input    int64
	Output   int64
}

func (c Cost) of(d Dim) int64 {
	switch d {
	case Requests:
		return c.Requests
	case InputTokens:
		return c.Input
	case OutputTokens:
		return c.Output
	}
	return c.Input + c.Output
}

// LimiterConfig configures a Limiter. A zero Rate leaves its dimension
// unlimited until the server reports a limit (Limiter.Observe).
type LimiterConfig struct {
	Requests Rate // e.g. {Limit: 50} is 50 RPM
	Input    Rate // input tokens
	Output   Rate // output tokens
	Total    Rate // input plus output tokens
	Refill   Refill
}

// Limiter paces requests by several token buckets at once: requests, input
// tokens, output tokens and total tokens, for one upstream and key. A
// reservation debits every dimension together, under one lock, so concurrent
// requests cannot oversubscribe any of them, and its ReadyAt is the latest of
// the dimensions' ready times. See Bucket for the refill and server-header
// model.
//
// Limiter is safe for concurrent use.
type Limiter struct {
	mu sync.Mutex
	b  [numDims]Bucket
}

// NewLimiter returns a Limiter with full buckets.
func NewLimiter(cfg LimiterConfig) *Limiter {
	l := new(Limiter)
	l.b[Requests].configure(cfg.Requests, cfg.Refill)
	l.b[InputTokens].configure(cfg.Input, cfg.Refill)
	l.b[OutputTokens].configure(cfg.Output, cfg.Refill)
	l.b[TotalTokens].configure(cfg.Total, cfg.Refill)
	return l
}

// Reservation is a request's claim on a Limiter. After Reserve, call exactly
// one of Commit (the request was sent) or Cancel (it was not); later calls
// are no-ops. Do not copy a Reservation before settling it.
type Reservation struct {
	// ReadyAt is the earliest time the request may be sent.
	ReadyAt time.Time

	l    *Limiter
	cost Cost
	done bool
	// seq is each bucket's debit counter just after this reservation;
	// sent, once marked, is each bucket's send counter just after it went.
	seq    [numDims]float64
	sent   [numDims]float64
	marked bool
	// resentAt is when the request last went again after a try the server
	// did not charge (see Resend); zero if it went once.
	resentAt time.Time
}

// Sent marks the moment the request goes to the server. Call it just
// before sending: observations then know exactly which of the limiter's
// other requests the server could not yet have counted (those sent after
// this one, and those not sent yet), even when requests are sent in another
// order than they were reserved, as when many wait for the same window.
func (r *Reservation) Sent() {
	if r.l == nil || r.done || r.marked {
		return
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	r.marked = true
	for d := range numDims {
		b := &r.l.b[d]
		b.sent += float64(r.cost.of(d))
		r.sent[d] = b.sent
	}
}

// Resend marks that the request goes to the server again, at now, after a
// try the server did not charge (a connection reset, an edge 502): the
// retry keeps the reservation, and so its place. The server counts the
// request only now, after every request sent in between, so the next
// figures it reports are read relative to this send, not the first: in a
// continuous bucket, reading them relative to the first send would take
// every request sent since as one the server had not seen yet, and lower
// the balance by that many. (Fixed windows keep the first send's time: the
// debit stays in the window it was placed in.) Resend on a reservation
// never marked Sent marks it.
func (r *Reservation) Resend(now time.Time) {
	if r.l == nil || r.done {
		return
	}
	if !r.marked {
		r.Sent()
		return
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	for d := range numDims {
		// The first send is already in the counter; this one replaces it.
		r.sent[d] = r.l.b[d].sent
	}
	r.resentAt = now
}

// Reserve debits c (the estimate: input tokens, and max_tokens for output)
// from every dimension at now and returns the reservation. Reservations are
// served in the order they were made.
func (l *Limiter) Reserve(now time.Time, c Cost) Reservation {
	return l.reserve(now, c, false)
}

// ReservePriority is Reserve for a request that must not wait behind newer
// ones, such as a retry: in a fixed window it may take room left in the
// current window even after newer reservations were placed in the next.
func (l *Limiter) ReservePriority(now time.Time, c Cost) Reservation {
	return l.reserve(now, c, true)
}

func (l *Limiter) reserve(now time.Time, c Cost, prio bool) Reservation {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := Reservation{ReadyAt: now, l: l, cost: c}
	for d := range numDims {
		if t := l.b[d].ready(now, c.of(d), prio); t.After(r.ReadyAt) {
			r.ReadyAt = t
		}
	}
	// Every dimension is debited at the time the request will really go.
	for d := range numDims {
		l.b[d].take(now, r.ReadyAt, c.of(d), prio)
		r.seq[d] = l.b[d].seq
	}
	return r
}

// Commit reconciles the estimate with the actual usage, at now: extra use is
// debited (the bucket may go into debt, repaid by the refill), unused tokens
// are returned when that is sound. Requests and input tokens are settled as
// servers count them, on arrival (see Bucket.Settle); output tokens as
// servers that count max_tokens on arrival and adjust at the end (see
// Bucket.Adjust). Tokens returned help reservations made afterwards, not
// those already waiting, so prefer realistic estimates to worst cases where
// the server allows it.
func (r *Reservation) Commit(now time.Time, actual Cost) {
	r.settle(now, actual, false)
}

// Cancel returns the reservation's tokens; the request was never sent.
func (r *Reservation) Cancel(now time.Time) {
	r.settle(now, Cost{}, true)
}

func (r *Reservation) settle(now time.Time, actual Cost, cancel bool) {
	if r.l == nil || r.done {
		return
	}
	r.done = true
	l, c := r.l, r.cost
	l.mu.Lock()
	defer l.mu.Unlock()
	if cancel {
		// Never charged: it no longer counts among the requests the server
		// has not seen, and its place is free again.
		for d := range numDims {
			l.b[d].seq -= float64(c.of(d))
			if r.marked {
				l.b[d].sent -= float64(c.of(d))
			}
		}
		l.b[Requests].cancel(now, c.Requests, r.ReadyAt)
		l.b[InputTokens].cancel(now, c.Input, r.ReadyAt)
		l.b[OutputTokens].cancel(now, c.Output, r.ReadyAt)
		l.b[TotalTokens].cancel(now, c.Input+c.Output, r.ReadyAt)
		return
	}
	l.b[Requests].Settle(now, c.Requests, actual.Requests, r.ReadyAt)
	l.b[InputTokens].Settle(now, c.Input, actual.Input, r.ReadyAt)
	l.b[TotalTokens].Settle(now, c.Input, actual.Input, r.ReadyAt)
	l.b[OutputTokens].Adjust(now, c.Output, actual.Output, r.ReadyAt)
	l.b[TotalTokens].Adjust(now, c.Output, actual.Output, r.ReadyAt)
}

// Wait sleeps until r may be sent: its ReadyAt, or later if a pause was set
// since it was reserved. It returns context.Cause(ctx) if ctx ends first;
// the caller then cancels the reservation. Wait holds no admission slot:
// acquire the Gate after it returns.
func (l *Limiter) Wait(ctx context.Context, r Reservation) error {
	for {
		t := r.ReadyAt
		l.mu.Lock()
		for d := range numDims {
			if p := l.b[d].pause; p.After(t) {
				t = p
			}
		}
		l.mu.Unlock()
		d := time.Until(t)
		if d <= 0 {
			return nil
		}
		if err := Sleep(ctx, d); err != nil {
			return err
		}
	}
}

// Observe folds in one dimension's rate-limit headers, from the response to
// a request sent at sent (see Bucket.Observe: learned limits override
// configured ones when lower, remaining never adds tokens, the bucket
// refills to the limit at reset less what was sent after sent).
func (l *Limiter) Observe(d Dim, limit, remaining int64, reset, sent time.Time) {
	if d >= numDims {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b[d].Observe(limit, remaining, reset, sent)
}

// Observe folds in one dimension's rate-limit headers from the response to
// r's request, like Limiter.Observe with r.ReadyAt as the send time, but
// more precisely: it knows which of the debits the server had already
// counted. Prefer it when the reservation is at hand.
func (r *Reservation) Observe(d Dim, limit, remaining int64, reset time.Time) {
	if r.l == nil || d >= numDims {
		return
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	after := r.seq[d]
	if r.marked {
		after = r.sent[d]
	}
	sent := r.ReadyAt
	if !r.resentAt.IsZero() && r.l.b[d].mode == Continuous && r.resentAt.After(sent) {
		sent = r.resentAt
	}
	r.l.b[d].observe(limit, remaining, reset, sent, float64(r.cost.of(d)), after, r.marked)
}

// PauseUntil admits nothing before t, in dimension d or in all of them
// (AllDims), typically after a 429 with a retry-after. Because every request
// is metered in every dimension, a pause in any one of them holds back every
// reservation, including those already made and now in Wait.
func (l *Limiter) PauseUntil(d Dim, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range numDims {
		if d == AllDims || d == i {
			l.b[i].PauseUntil(t)
		}
	}
}

// Stats returns a snapshot of dimension d at now.
func (l *Limiter) Stats(d Dim, now time.Time) BucketStats {
	if d >= numDims {
		return BucketStats{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b[d].Stats(now)
}
