package sched

import (
	"sync"
	"time"
)

// State is a circuit breaker state.
type State uint8

// Breaker states.
const (
	// Closed admits every request and watches the failure rate.
	Closed State = iota
	// Open refuses every request until the open interval ends.
	Open
	// HalfOpen admits a fixed number of probes and refuses the rest.
	HalfOpen
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "unknown"
}

// BreakerConfig configures a Breaker. Zero fields take the defaults named.
type BreakerConfig struct {
	// Window is the sliding time window over which the failure rate is
	// measured (default 30 s). It is kept in Buckets buckets (default 10),
	// so it slides by Window/Buckets.
	Window  time.Duration
	Buckets int
	// MinRequests is the fewest outcomes in the window for the breaker to
	// open (default 10); a handful of early failures proves nothing.
	MinRequests int
	// FailureRate opens the breaker when failures/outcomes in the window
	// reaches it (default 0.5; values above 1 mean 1).
	FailureRate float64
	// OpenFor is how long the breaker stays open the first time (default
	// 5 s). Each consecutive re-open, without a close in between, doubles it
	// up to MaxOpenFor (default 2 min).
	OpenFor    time.Duration
	MaxOpenFor time.Duration
	// Probes is the number of requests admitted while half-open (default 1).
	// All must succeed to close; any failure re-opens.
	Probes int
	// ProbeTimeout bounds how long probes may stay unanswered (default
	// 1 min); after it, the next Allow treats them as failed and re-opens.
	// It is what recovers a probe whose permit was lost.
	ProbeTimeout time.Duration
	// OnChange, if set, is called on every state change, in order, with
	// the breaker's lock held: it must be quick and must not call the
	// Breaker. Metrics and logs hook in here.
	OnChange func(from, to State, at time.Time)
}

// Breaker is a circuit breaker for one upstream. It is a pure state
// machine: every method takes the current time. Each request that Allow
// admits is counted exactly once, by its Permit.
//
// Breaker is safe for concurrent use.
type Breaker struct {
	mu       sync.Mutex
	cfg      BreakerConfig
	width    time.Duration // bucket width
	buckets  []outcomeBucket
	state    State
	gen      uint64    // bumped on every state change; stale permits are ignored
	since    time.Time // time of the last state change
	until    time.Time // Open: end of the interval; HalfOpen: probe deadline
	opens    int       // consecutive opens without a close
	probes   int       // probes admitted and not cancelled in this half-open
	probesOK int
}

type outcomeBucket struct {
	epoch    int64 // bucket number (time / width) the counts belong to
	total    int64
	failures int64
}

// NewBreaker returns a closed Breaker configured by cfg.
func NewBreaker(cfg BreakerConfig) *Breaker {
	if cfg.Window <= 0 {
		cfg.Window = 30 * time.Second
	}
	if cfg.Buckets <= 0 {
		cfg.Buckets = 10
	}
	if cfg.MinRequests <= 0 {
		cfg.MinRequests = 10
	}
	if cfg.FailureRate <= 0 || cfg.FailureRate != cfg.FailureRate {
		cfg.FailureRate = 0.5
	}
	if cfg.OpenFor <= 0 {
		cfg.OpenFor = 5 * time.Second
	}
	if cfg.MaxOpenFor < cfg.OpenFor {
		cfg.MaxOpenFor = max(2*time.Minute, cfg.OpenFor)
	}
	if cfg.Probes <= 0 {
		cfg.Probes = 1
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = time.Minute
	}
	b := &Breaker{cfg: cfg, width: max(cfg.Window/time.Duration(cfg.Buckets), 1)}
	b.buckets = make([]outcomeBucket, cfg.Buckets)
	for i := range b.buckets {
		b.buckets[i].epoch = -1 << 62
	}
	return b
}

// Permit is the right to send one request. Call exactly one of Record (the
// upstream answered, well or badly) or Cancel (the request ended for a reason
// that says nothing about the upstream's health, such as the client going
// away). Later calls on the same Permit are no-ops; do not copy a Permit
// before using it, or the copy could be counted again.
type Permit struct {
	b     *Breaker
	gen   uint64
	probe bool
	done  bool
}

// Allow reports whether a request may go to the upstream now. While the
// breaker refuses, it returns a zero Permit and an *OpenError (wrapping
// ErrOpen) that says when to ask again.
func (b *Breaker) Allow(now time.Time) (Permit, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case Open:
		if now.Before(b.until) {
			return Permit{}, &OpenError{State: Open, RetryAt: b.until}
		}
		b.probes, b.probesOK = 0, 0
		b.setState(HalfOpen, now)
		b.until = now.Add(b.cfg.ProbeTimeout)
	case HalfOpen:
		if b.probes >= b.cfg.Probes && !now.Before(b.until) {
			b.trip(now)
			return Permit{}, &OpenError{State: Open, RetryAt: b.until}
		}
	}
	if b.state == HalfOpen {
		if b.probes >= b.cfg.Probes {
			return Permit{}, &OpenError{State: HalfOpen, RetryAt: now.Add(b.cfg.OpenFor)}
		}
		b.probes++
		return Permit{b: b, gen: b.gen, probe: true}, nil
	}
	return Permit{b: b, gen: b.gen}, nil
}

// Record counts the request's outcome: ok is false when the upstream failed
// (5xx, 529, a connection error, a timeout before the first byte; the
// caller decides, and a 429 is the rate limiter's business, not a health
// failure). Record as soon as health is known, for a stream at its first
// byte. While closed, every outcome re-evaluates the window, so the breaker
// opens as soon as it holds MinRequests outcomes at or above FailureRate.
// Outcomes of permits issued before the last state change are ignored, so
// slow answers from before an open cannot close or re-open it.
func (p *Permit) Record(now time.Time, ok bool) {
	if p.b == nil || p.done {
		return
	}
	p.done = true
	b := p.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.gen != b.gen {
		return
	}
	switch b.state {
	case Closed:
		b.count(now, ok)
		if b.tripping(now) {
			b.trip(now)
		}
	case HalfOpen:
		if !ok {
			b.trip(now)
			return
		}
		b.probesOK++
		if b.probesOK >= b.cfg.Probes {
			b.opens = 0
			for i := range b.buckets {
				b.buckets[i] = outcomeBucket{epoch: -1 << 62}
			}
			b.setState(Closed, now)
		}
	}
}

// Cancel returns the permit without counting an outcome; a half-open probe
// slot becomes free for another request.
func (p *Permit) Cancel() {
	if p.b == nil || p.done {
		return
	}
	p.done = true
	b := p.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.probe && p.gen == b.gen && b.state == HalfOpen {
		b.probes--
	}
}

// BreakerStats is a snapshot of a Breaker.
type BreakerStats struct {
	State State
	Since time.Time // when the breaker entered State
	// Requests and Failures are the outcomes in the window (closed state).
	Requests int64
	Failures int64
	// Opens counts consecutive opens without a close; it sets the backoff.
	Opens int
}

// Stats returns a snapshot at now. The state is the stored one: an open
// breaker whose interval has ended turns half-open at the next Allow.
func (b *Breaker) Stats(now time.Time) BreakerStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	total, failures := b.totals(now)
	return BreakerStats{State: b.state, Since: b.since, Requests: total, Failures: failures, Opens: b.opens}
}

// State returns the stored state (see Stats).
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

func (b *Breaker) setState(to State, now time.Time) {
	from := b.state
	b.state = to
	b.gen++
	b.since = now
	if b.cfg.OnChange != nil {
		b.cfg.OnChange(from, to, now)
	}
}

// trip opens the breaker, doubling the interval on consecutive opens.
func (b *Breaker) trip(now time.Time) {
	d := b.cfg.OpenFor
	for i := 0; i < b.opens && d < b.cfg.MaxOpenFor; i++ {
		d *= 2
	}
	b.opens++
	b.until = now.Add(min(d, b.cfg.MaxOpenFor))
	b.setState(Open, now)
}

func (b *Breaker) epoch(now time.Time) int64 {
	ns := now.UnixNano()
	w := int64(b.width)
	e := ns / w
	if ns%w < 0 {
		e--
	}
	return e
}

func (b *Breaker) count(now time.Time, ok bool) {
	e := b.epoch(now)
	s := &b.buckets[int(uint64(e)%uint64(len(b.buckets)))]
	switch {
	case s.epoch > e:
		return // older than the window
	case s.epoch < e:
		*s = outcomeBucket{epoch: e}
	}
	s.total++
	if !ok {
		s.failures++
	}
}

func (b *Breaker) totals(now time.Time) (total, failures int64) {
	e := b.epoch(now)
	lo := e - int64(len(b.buckets))
	for _, s := range b.buckets {
		if s.epoch > lo && s.epoch <= e {
			total += s.total
			failures += s.failures
		}
	}
	return total, failures
}

func (b *Breaker) tripping(now time.Time) bool {
	total, failures := b.totals(now)
	return total >= int64(b.cfg.MinRequests) &&
		float64(failures) >= min(b.cfg.FailureRate, 1)*float64(total)
}
