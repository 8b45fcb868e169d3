package sched

import (
	"sync"
	"time"
)

// Signal classifies one finished upstream attempt for AIMD.
type Signal uint8

const (
	// Success is an answer that arrived (2xx, or a client error that says
	// nothing about load). Its time to first byte is still compared with
	// the target.
	Success Signal = iota
	// Congestion is a 529, 5xx, or a timeout or connection failure before
	// the first byte.
	Congestion
	// Neutral outcomes (a request cancelled by its client, a 4xx caused by
	// the request itself, a 429) change nothing. A 429 is the rate limit
	// speaking, not load: the rate model pauses for it, and cutting
	// concurrency as well would only slow the windows that follow.
	Neutral
)

// SignalOf maps an HTTP status code to a Signal: 529 and 5xx are
// Congestion, 4xx (429 included) are Neutral, the rest Success.
func SignalOf(status int) Signal {
	switch {
	case status >= 500:
		return Congestion
	case status >= 400:
		return Neutral
	}
	return Success
}

// AIMDConfig configures an AIMD. Zero fields take the defaults named.
type AIMDConfig struct {
	// Initial is the starting limit (default Min), clamped into [Min, Max].
	Initial int
	// Min is the floor (default 1) and Max the ceiling (default 64).
	Min int
	Max int
	// IncreaseEvery is the number of successes that add 1 to the limit. Zero
	// means one limit's worth: at limit L it takes L successes to reach
	// L+1, so the limit grows by about one per round of the whole window,
	// as TCP's congestion avoidance does, whatever the limit.
	IncreaseEvery int
	// Factor multiplies the limit on congestion (default 0.7; clamped into
	// (0, 1)). A decrease always removes at least one slot, down to Min.
	// The default is gentler than TCP's 0.5 because the rate limiter, not
	// the concurrency limit, absorbs a rate-limit storm, and Cooldown
	// already stops one storm from compounding.
	Factor float64
	// Cooldown is the least time between two decreases (default 5 s). The
	// failures of requests that were already in flight at the first one
	// must not cut the limit again: one congestion event, one decrease.
	Cooldown time.Duration
	// TargetTTFB, if positive, makes a success whose time to first byte
	// exceeds it count as congestion. Pass time to first byte, never total
	// stream time: a long generation is not congestion.
	TargetTTFB time.Duration
	// Target, if set, receives every new limit (for example a *Gate), under
	// the AIMD's lock so that updates arrive in order.
	Target LimitSetter
}

// AIMD sizes a concurrency limit by additive increase and multiplicative
// decrease. It is a pure state machine: Record takes the current time.
//
// AIMD is safe for concurrent use.
type AIMD struct {
	mu        sync.Mutex
	cfg       AIMDConfig
	limit     int
	successes int
	lastCut   time.Time
	cut       bool // lastCut is set
	// ceiling is the limit the latest refusal for capacity left, at
	// refusedAt: growing past it waits for Cooldown, so a cap is probed
	// now and then rather than hit every few requests.
	ceiling   int
	refusedAt time.Time
}

// NewAIMD returns an AIMD configured by cfg and, if cfg.Target is set,
// applies the initial limit to it.
func NewAIMD(cfg AIMDConfig) *AIMD {
	if cfg.Min <= 0 {
		cfg.Min = 1
	}
	if cfg.Max <= 0 {
		cfg.Max = max(64, cfg.Min)
	}
	cfg.Max = max(cfg.Max, cfg.Min)
	if cfg.Initial <= 0 {
		cfg.Initial = cfg.Min
	}
	cfg.Initial = min(max(cfg.Initial, cfg.Min), cfg.Max)
	if !(cfg.Factor > 0 && cfg.Factor < 1) {
		cfg.Factor = 0.7
	}
	if cfg.Cooldown <= 0 {
		cfg.Cooldown = 5 * time.Second
	}
	a := &AIMD{cfg: cfg, limit: cfg.Initial}
	if cfg.Target != nil {
		cfg.Target.SetLimit(a.limit)
	}
	return a
}

// Record folds one outcome into the limit and returns the new limit. ttfb is
// the attempt's time to first byte, or 0 if unknown.
func (a *AIMD) Record(now time.Time, s Signal, ttfb time.Duration) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s == Success && a.cfg.TargetTTFB > 0 && ttfb > a.cfg.TargetTTFB {
		s = Congestion
	}
	old := a.limit
	switch s {
	case Success:
		a.successes++
		every := a.cfg.IncreaseEvery
		if every <= 0 {
			every = a.limit
		}
		if a.successes >= every && (a.ceiling == 0 || a.limit < a.ceiling || now.Sub(a.refusedAt) >= a.cfg.Cooldown) {
			a.successes = 0
			a.limit = min(a.limit+1, a.cfg.Max)
		}
	case Congestion:
		if a.cut && now.Sub(a.lastCut) < a.cfg.Cooldown {
			break
		}
		a.cut, a.lastCut = true, now
		a.successes = 0
		a.ceiling = 0 // a guess, not a refusal's measurement
		next := int(float64(a.limit) * a.cfg.Factor)
		a.limit = max(min(next, a.limit-1), a.cfg.Min)
	}
	if a.limit != old && a.cfg.Target != nil {
		a.cfg.Target.SetLimit(a.limit)
	}
	return a.limit
}

// Refused folds in a refusal for capacity (a concurrency cap's 529 or
// 503) of a request sent while inflight requests were in flight, its own
// included: the server holds fewer than it saw in flight, so the limit
// drops to inflight−1 at once. That is a measurement, not a guess: no
// cooldown applies. Growing past the new limit again waits for Cooldown after the refusal. It
// returns the new limit.
func (a *AIMD) Refused(now time.Time, inflight int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.limit
	a.successes = 0
	a.limit = max(min(a.limit, inflight-1), a.cfg.Min)
	a.ceiling, a.refusedAt = a.limit, now
	if a.limit != old && a.cfg.Target != nil {
		a.cfg.Target.SetLimit(a.limit)
	}
	return a.limit
}

// Limit returns the current limit.
func (a *AIMD) Limit() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.limit
}
