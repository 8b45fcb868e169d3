package sched

import (
	"math"
	"time"
)

// Refill is how a Bucket regains capacity.
type Refill uint8

const (
	// Continuous refills at Limit/Per, smoothly (Anthropic's model).
	Continuous Refill = iota
	// Step refills to the full limit at the start of each window of length
	// Per (a fixed-window server).
	Step
)

// Rate is a limit per period, such as 50 requests per minute.
type Rate struct {
	// Limit is the capacity per Per; 0 means unlimited (or not yet known).
	Limit int64
	// Per is the window; 0 means one minute (RPM, TPM).
	Per time.Duration
}

// BucketStats is a snapshot of one Bucket.
type BucketStats struct {
	// Limit is the effective limit: the configured one or a lower one
	// learned from the server; 0 means unlimited.
	Limit int64
	// Available is what a reservation could take now; negative when
	// reservations are queued beyond the refill. +Inf when unlimited.
	Available float64
	// PausedUntil is the end of a pause set by PauseUntil, if any.
	PausedUntil time.Time
	// FrozenUntil is the server's reset time learned by Observe, before
	// which a Continuous bucket does not refill.
	FrozenUntil time.Time
}

// Bucket is a token bucket for one dimension (requests, input tokens...).
// Reservations are scheduled at once, first come first served: each is told
// the earliest time it may be sent, after every reservation made before it,
// so concurrent callers cannot oversubscribe and waiters do not starve. A
// reservation needs min(n, limit) tokens to be ready, so a request larger
// than the whole limit waits for a full bucket rather than forever.
//
// A Continuous bucket tracks its balance just after the latest scheduled
// send and refills from there, capped at the limit, as the server's bucket
// will. A Step bucket places each reservation in the first window (at or
// after the latest placement) where it fits and forfeits what a window
// leaves unused, as a fixed-window server does. Either way the bucket is a
// lower bound of the server's capacity: when it is the key's only user and
// the estimates are not exceeded, a request it lets through is not refused
// for this dimension (a property test checks this against simulated servers
// of both kinds, with random latencies and out-of-order headers).
//
// Send times are fixed when a reservation is made. Tokens credited later
// (Settle below the estimate, a cancel) speed up reservations made
// afterwards, not those already waiting; and none are credited that the
// server may have lost to its cap meanwhile.
//
// A Bucket is a pure state machine and is NOT safe for concurrent use;
// Limiter holds four of them under one lock. The zero value is unlimited.
type Bucket struct {
	configured int64
	per        time.Duration
	mode       Refill
	capacity   float64 // effective limit; 0 means unlimited
	started    bool
	pause      time.Time
	reset      time.Time // the server's figures of this time replaced ours

	// Continuous: the balance just after the latest scheduled send.
	bal    float64
	tailAt time.Time
	freeze time.Time // from an observation: no refill before it
	jumpTo float64   // ...and at it, at least this much
	peaks  []peak    // balances just before scheduled sends (see credit)

	// Step. Windows are [epoch + k*per, epoch + (k+1)*per).
	epoch time.Time
	tail  int64   // window of the latest placement
	used  float64 // placed in window tail
	prev  float64 // placed in window tail-1

	// Debits by the time they reach the server, summed per slot of
	// per/histSlots, over the retention: what Observe needs to know what
	// the server had not yet seen when it wrote its headers.
	hist    []float64
	hstart  time.Time // slot 0 starts here
	h0      int64     // slot number of hist[0]
	lastAt  time.Time // latest debit time recorded; records are monotone
	trimmed bool      // slots before h0 were dropped
	far     time.Time // latest debit too far ahead to be itemized

	// seq sums every debit taken and not cancelled, in reservation order;
	// sent sums the debits of reservations marked sent, in send order. A
	// reservation remembers one of them just after its own debit, so that
	// its observation can tell exactly which debits the server could not
	// yet have seen (see Reservation.Observe and Sent); the per-slot history
	// above can only bound them.
	seq  float64
	sent float64
}

// NewBucket returns a full bucket with rate r refilled by mode.
func NewBucket(r Rate, mode Refill) *Bucket {
	b := new(Bucket)
	b.configure(r, mode)
	return b
}

func (b *Bucket) configure(r Rate, mode Refill) {
	*b = Bucket{configured: max(r.Limit, 0), per: r.Per, mode: mode}
	if b.per <= 0 {
		b.per = time.Minute
	}
	b.capacity = float64(b.configured)
}

// start anchors a bucket's clock at its first use, full.
func (b *Bucket) start(now time.Time) {
	if !b.started {
		b.started, b.tailAt, b.epoch, b.hstart, b.bal = true, now, now, now, b.capacity
	}
}

// Reserve debits n and returns the earliest time the request may be sent,
// never before a pause ends. The debit is placed at that time: the request
// must not be sent earlier.
func (b *Bucket) Reserve(now time.Time, n int64) time.Time {
	t := b.ready(now, n, false)
	b.take(now, t, n, false)
	return t
}

// ready returns the earliest time n could be sent after everything
// scheduled so far, and not before a pause ends. It changes nothing.
func (b *Bucket) ready(now time.Time, n int64, prio bool) time.Time {
	t := now
	if b.capacity > 0 && n > 0 {
		b.start(now)
		if b.mode == Step {
			t = b.stepReady(now, float64(n), prio)
		} else {
			t = b.contReady(now, float64(n))
		}
	}
	if b.pause.After(t) {
		t = b.pause
	}
	return t
}

// take debits n sent at t, which is not before ready(now, n, prio).
func (b *Bucket) take(now, t time.Time, n int64, prio bool) {
	if n <= 0 {
		return
	}
	// Counted even while the limit is unknown: when the first answer
	// teaches it, the requests already sent after that answer's own are
	// still in flight, unseen by the server, and must be charged.
	b.seq += float64(n)
	if b.capacity == 0 {
		return
	}
	b.start(now)
	if b.mode == Step {
		b.stepTake(t, float64(n), prio)
	} else {
		b.contTake(now, t, float64(n))
	}
	b.record(now, t, float64(n))
}

// Settle reconciles a reservation of reserved tokens, sent at sent, with the
// actual amount, for a server that counts the actual amount when the
// request arrives (as servers count requests and input tokens). Extra use
// is always debited (after the latest scheduled send, or in the latest
// window). Unused tokens are credited back only as far as that is sound:
// not if the server's figures have replaced the balance since sent (they
// already include the truth), for a Continuous bucket no more than the
// server cannot have lost to its cap since, and for a Step bucket only
// within the current window. Settle(now, n, 0, sent) cancels a reservation
// that was never sent.
func (b *Bucket) Settle(now time.Time, reserved, actual int64, sent time.Time) {
	b.settle(now, float64(max(actual, 0)-max(reserved, 0)), sent, false, false)
}

// cancel returns a reservation of reserved that was never charged.
func (b *Bucket) cancel(now time.Time, reserved int64, sent time.Time) {
	b.settle(now, -float64(max(reserved, 0)), sent, false, true)
}

// Adjust is Settle for a server that counts the reserved amount when the
// request arrives and adjusts it to the actual amount when the request ends
// (as Anthropic does for output tokens: it counts max_tokens, then the
// tokens generated). Unused tokens are credited at now, as the server does.
func (b *Bucket) Adjust(now time.Time, reserved, actual int64, sent time.Time) {
	b.settle(now, float64(max(actual, 0)-max(reserved, 0)), sent, true, false)
}

func (b *Bucket) settle(now time.Time, d float64, sent time.Time, atEnd, cancelled bool) {
	if b.capacity == 0 || d == 0 {
		return
	}
	b.start(now)
	if d > 0 {
		b.record(now, now, d)
		if b.mode == Step {
			b.roll(b.window(now))
			b.place(d)
		} else {
			b.bal -= d
			b.jumpTo -= d
		}
		return
	}
	if b.mode == Step && cancelled && b.window(sent) == b.window(now) {
		// Never charged by the server: its place in the current window is
		// free again, even if newer reservations already fill the next.
		cur := b.window(now)
		b.roll(cur)
		switch b.tail {
		case cur:
			b.used = max(b.used+d, 0)
		case cur + 1:
			b.prev = max(b.prev+d, 0)
		}
		return
	}
	if !atEnd && sent.Before(b.reset) {
		return
	}
	if b.mode == Step {
		cur := b.window(now)
		b.roll(cur)
		if b.tail == cur && (atEnd || b.window(sent) == cur) {
			b.used = max(b.used+d, 0)
		}
		return
	}
	if atEnd {
		b.credit(-d, now, now)
	} else {
		b.credit(-d, sent, now)
	}
}

// Observe folds in rate-limit headers: the server's limit, its remaining
// capacity and when it resets (negative or zero values and a zero time mean
// unknown). sent is when the request that carried them was sent (its
// reservation's ReadyAt): the figures describe that moment, so whatever
// this bucket scheduled from then on is taken off remaining. Passing the
// receive time instead is unsafe when the response was slow. The bucket is
// kept a lower bound of the server's:
//
//   - A learned limit replaces the configured one when it is lower.
//   - remaining can only lower the balance, never raise it.
//   - A Continuous bucket does not refill before reset; at reset it holds
//     the limit less what was scheduled between sent and reset, then
//     refills as before. A Step bucket moves its window boundaries to reset.
//
// This step model is right for both kinds of server. A fixed-window server
// does exactly this. A continuous-bucket server (Anthropic) reports as reset
// the time its bucket will be full again; until then it holds at least
// remaining less what we sent since, and at reset exactly the limit less
// what we sent since, so the model never believes in more capacity than the
// server has, and it is exact at reset. An observation whose reset is not
// after sent is stale; only its limit is used.
//
// Reset times are hints with clock skew and often whole seconds: pass them
// rounded up, with a margin, or the bucket may refill before the server.
func (b *Bucket) Observe(limit, remaining int64, reset, sent time.Time) {
	b.observe(limit, remaining, reset, sent, 0, -1, false)
}

// observe is Observe knowing that own of the debits at sent belong to the
// request whose headers these are, which the server had already counted.
//
// after, when not negative, is the bucket's seq (or, for a request marked
// sent, its send counter) just after the observed request: in Step mode the
// debits the server had not seen are then counted from the counters rather
// than bounded by the per-slot history. (Continuous mode works on the
// history either way.)
//
// The server's figures plus our debits it had not seen estimate its count.
// Normally only the debits not sent yet are added: ours that are sent are in
// our own count already (which the estimate can only raise), and adding the
// ones sent after the observed request would count twice every one of them
// the server saw first. When this observation is the one that teaches the
// limit, nothing was counted locally before it, so all our debits but its
// own are added: some may be counted twice, none is missed.
func (b *Bucket) observe(limit, remaining int64, reset, sent time.Time, own, after float64, marked bool) {
	learning := b.capacity == 0
	if limit > 0 {
		b.learn(limit, sent)
	}
	if b.capacity == 0 || remaining < 0 || (!reset.IsZero() && !reset.After(sent)) {
		return
	}
	b.start(sent)
	var later float64
	covered := true
	if after >= 0 && b.mode == Step {
		switch {
		case learning:
			// Ours in flight may have reached the server before or
			// after the observed one: count all but it as unseen.
			later = max(b.seq-own, 0)
		case marked:
			later = max(b.seq-b.sent, 0)
		default:
			later = max(b.seq-after, 0)
		}
	} else {
		later, covered = b.since(sent)
		if !covered {
			// Without the debits since sent, fall back on our own count,
			// which (for a single client) already includes them.
			later = 0
		}
		// The server's figures include the observed request itself: take
		// it out of what it had not seen.
		later -= min(max(own, 0), later)
	}
	switch {
	case b.mode == Step:
		b.stepObserve(float64(remaining), later, reset, sent)
	case marked && reset.IsZero() && !learning:
		b.contObserveExact(float64(remaining), max(b.seq-after, 0), sent)
	default:
		b.contObserve(float64(remaining), later, own, covered, reset, sent)
	}
}

// learn applies a limit reported by the server.
func (b *Bucket) learn(limit int64, now time.Time) {
	c := float64(limit)
	if b.configured > 0 && b.configured < limit {
		c = float64(b.configured)
	}
	switch {
	case b.capacity == 0:
		b.capacity = c
		b.start(now)
		b.bal = c
	case c < b.capacity:
		b.capacity = c
		b.bal = min(b.bal, c)
		b.jumpTo = min(b.jumpTo, c)
		b.used = min(b.used, c)
	default:
		b.capacity = c // a raised limit adds room, but no tokens now
	}
}

// PauseUntil makes every reservation wait until at least t (after a 429).
// Pauses only lengthen.
func (b *Bucket) PauseUntil(t time.Time) {
	if t.After(b.pause) {
		b.pause = t
	}
}

// Stats returns a snapshot at now.
func (b *Bucket) Stats(now time.Time) BucketStats {
	s := BucketStats{Available: math.Inf(1), PausedUntil: b.pause}
	if b.capacity == 0 {
		return s
	}
	b.start(now)
	s.Limit = int64(b.capacity)
	if b.mode == Step {
		cur := b.window(now)
		b.roll(cur)
		s.Available = b.capacity*float64(cur-b.tail+1) - b.used
		return s
	}
	s.FrozenUntil = b.freeze
	if now.Before(b.tailAt) {
		// Sends are still scheduled: report the debt, in tokens, that
		// the refill must repay before a new reservation is ready.
		s.Available = b.bal - b.refill(now, b.tailAt)
		return s
	}
	s.Available = b.project(now)
	return s
}
