package sched

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Backoff computes retry delays: exponential with full jitter, or the
// server's retry-after plus a little jitter, within a bound on the total
// wait. The zero value uses the defaults named on the fields and the
// math/rand/v2 global source; set Rand for reproducible delays. Do not copy
// a Backoff after first use.
//
// Backoff is safe for concurrent use.
type Backoff struct {
	// Base is the first delay's upper bound (default 500 ms); each retry
	// doubles it up to Cap (default 30 s). The delay is drawn uniformly
	// from [0, bound] ("full jitter"), which spreads retrying clients best.
	Base time.Duration
	Cap  time.Duration
	// Jitter bounds the random wait added to a server's retry-after
	// (default 250 ms), so clients told the same time do not return at the
	// same instant.
	Jitter time.Duration
	// MaxWait bounds the total time one request may spend waiting between
	// attempts (default 2 min). Beyond it the caller should pass the error
	// to its client rather than keep it waiting (daily quotas, hour-long
	// retry-afters).
	MaxWait time.Duration
	// Rand is the random source; nil means the math/rand/v2 global one.
	Rand *rand.Rand

	mu sync.Mutex // guards Rand
}

// Next returns the delay before the next attempt. attempt is the number of
// retries already made (0 before the first retry), retryAfter the server's
// requested wait (0 if none) and waited the time already spent waiting. ok is
// false when the delay would take the total past MaxWait: give up.
func (b *Backoff) Next(attempt int, retryAfter, waited time.Duration) (d time.Duration, ok bool) {
	if retryAfter > 0 {
		d = retryAfter + b.random(orDefault(b.Jitter, 250*time.Millisecond))
	} else {
		base, limit := orDefault(b.Base, 500*time.Millisecond), orDefault(b.Cap, 30*time.Second)
		bound := base
		for i := 0; i < attempt && bound < limit; i++ {
			bound *= 2
		}
		d = b.random(min(bound, limit))
	}
	return d, waited+d <= orDefault(b.MaxWait, 2*time.Minute)
}

// random returns a duration uniform in [0, n].
func (b *Backoff) random(n time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	if b.Rand == nil {
		return time.Duration(rand.Int64N(int64(n) + 1))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return time.Duration(b.Rand.Int64N(int64(n) + 1))
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Sleep waits for d or until ctx ends, whichever is first, and returns
// context.Cause(ctx) in the second case. It uses a timer, so it runs in
// virtual time under testing/synctest.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
