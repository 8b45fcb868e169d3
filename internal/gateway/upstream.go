package gateway

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/sched"
)

// upstream is the scheduling state of one model API: admission gate, AIMD,
// rate limiter, breaker and backoff.
type upstream struct {
	name     string
	url      *url.URL
	provider llmapi.Provider // configured; 0 = detect per request
	guess    llmapi.Provider // from the host, for routing only
	apiKey   string

	gate *sched.Gate // nil when admission is disabled
	aimd *sched.AIMD // nil when AIMD is disabled
	// limiter paces requests; it is replaced once, by a continuous-refill
	// one, if the server's headers show a token bucket (see refillProbe).
	limiter    atomic.Pointer[sched.Limiter]
	limCfg     sched.LimiterConfig
	probe      refillProbe
	continuous atomic.Bool
	swapped    chan struct{}  // closed when the limiter is replaced
	breaker    *sched.Breaker // nil when disabled
	backoff    *sched.Backoff

	// outEstimate is a moving average of actual output tokens, used to
	// reserve output capacity (max_tokens would over-reserve); guarded by mu.
	mu          sync.Mutex
	outEstimate float64
}

// minOutputEstimate is the output reservation before any response was seen.
const minOutputEstimate = 256

func newUpstream(cfg *Config, u Upstream, m *metrics) (*upstream, error) {
	if u.Name == "" || strings.ContainsAny(u.Name, "/ ") {
		return nil, fmt.Errorf("name must be non-empty, without '/' or spaces")
	}
	pu, err := url.Parse(u.URL)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return nil, fmt.Errorf("url must be an absolute http(s) URL, got %q", u.URL)
	}
	pu.Path = strings.TrimSuffix(pu.Path, "/")
	up := &upstream{name: u.Name, url: pu, provider: u.Provider, guess: guessProvider(pu), apiKey: u.APIKey, outEstimate: minOutputEstimate}
	maxConc := u.MaxConcurrency
	if maxConc <= 0 {
		maxConc = 16
	}
	if !cfg.NoAdmission {
		up.gate = sched.NewGate(sched.GateConfig{
			Limit:     maxConc,
			PerAgent:  u.AgentMaxConcurrency,
			MaxQueue:  cfg.MaxQueue,
			AgingStep: cfg.AgingStep,
			Now:       cfg.Now,
		})
		if !cfg.NoAIMD {
			up.aimd = sched.NewAIMD(sched.AIMDConfig{
				Initial:    maxConc,
				Min:        min(cfg.AIMDMin, maxConc),
				Max:        maxConc,
				Factor:     cfg.AIMDFactor,
				Cooldown:   cfg.AIMDCooldown,
				TargetTTFB: cfg.TTFBTarget,
				Target:     up.gate,
			})
		}
	}
	refill := sched.Step
	if u.ContinuousRefill {
		refill = sched.Continuous
	}
	per := u.Window
	if per <= 0 {
		per = time.Minute
	}
	up.limCfg = sched.LimiterConfig{
		Requests: sched.Rate{Limit: u.RPM, Per: per},
		Input:    sched.Rate{Limit: u.ITPM, Per: per},
		Output:   sched.Rate{Limit: u.OTPM, Per: per},
		Total:    sched.Rate{Limit: u.TPM, Per: per},
		Refill:   refill,
	}
	up.limiter.Store(sched.NewLimiter(up.limCfg))
	up.swapped = make(chan struct{})
	up.probe.window = per
	up.probe.fixed = u.ContinuousRefill
	up.continuous.Store(u.ContinuousRefill)
	if !cfg.NoBreaker {
		name := u.Name
		up.breaker = sched.NewBreaker(sched.BreakerConfig{
			Window:       cfg.BreakerWindow,
			MinRequests:  cfg.BreakerMin,
			FailureRate:  cfg.BreakerRate,
			OpenFor:      cfg.BreakerOpenFor,
			MaxOpenFor:   cfg.BreakerMaxOpen,
			Probes:       cfg.BreakerProbes,
			ProbeTimeout: cfg.BreakerProbeWait,
			OnChange: func(from, to sched.State, at time.Time) {
				m.breakerState.WithLabelValues(name).Set(float64(to))
				cfg.Logger.Warn("circuit breaker", "upstream", name, "from", from.String(), "to", to.String())
			},
		})
	}
	up.backoff = &sched.Backoff{Base: cfg.RetryBase, Cap: cfg.RetryCap, MaxWait: cfg.MaxRetryWait, Rand: cfg.Rand}
	m.concLimit.WithLabelValues(u.Name).Set(float64(maxConc))
	return up, nil
}

// outputReservation is the output tokens to reserve on the rate limiter for
// a request allowed up to maxOut: the running average of real outputs,
// never more than maxOut.
func (u *upstream) outputReservation(maxOut int64) int64 {
	u.mu.Lock()
	est := int64(u.outEstimate + 0.5)
	u.mu.Unlock()
	if maxOut > 0 && est > maxOut {
		return maxOut
	}
	return est
}

// observeOutput folds a real output count into the moving average.
func (u *upstream) observeOutput(n int64) {
	if n <= 0 {
		return
	}
	u.mu.Lock()
	u.outEstimate = 0.9*u.outEstimate + 0.1*float64(n)
	u.mu.Unlock()
}

// observeLimits feeds a response's rate-limit headers to the limiter. Reset
// times are taken as given: providers round them up (to the second), and
// shifting them would move window boundaries, not just delay sends. A send
// that still lands a moment early is refused with a 429 and retried.
func (u *upstream) observeLimits(res *sched.Reservation, rl llmapi.RateLimits) {
	obs := func(d sched.Dim, l llmapi.Limit) {
		if !l.Known || l.Remaining < 0 {
			return
		}
		reset := l.Reset
		if u.continuous.Load() {
			// A bucket's reset is when it will be full; the continuous
			// model refills from the remaining count at the limit's rate
			// instead of waiting for it.
			reset = time.Time{}
		}
		res.Observe(d, l.Limit, l.Remaining, reset)
	}
	if u.probe.observe(rl.Requests) {
		u.continuous.Store(true)
		// The server refills continuously: from now on pace with a
		// continuous bucket. Reservations on the old limiter settle there.
		cfg := u.limCfg
		cfg.Refill = sched.Continuous
		lim := sched.NewLimiter(cfg)
		// Primed with what the old model has left in its current window:
		// it counted every request sent, where a single answer (which may
		// be older than others already back) could not.
		now := time.Now()
		old := u.limiter.Load()
		for _, x := range []struct {
			d sched.Dim
			l llmapi.Limit
		}{{sched.Requests, rl.Requests}, {sched.InputTokens, rl.InputTokens}, {sched.OutputTokens, rl.OutputTokens}, {sched.TotalTokens, rl.Tokens}} {
			if !x.l.Known || x.l.Limit <= 0 {
				continue
			}
			avail := old.Stats(x.d, now).Available
			if math.IsInf(avail, 1) || avail > float64(x.l.Limit) {
				avail = float64(x.l.Limit)
			}
			lim.Observe(x.d, x.l.Limit, int64(max(avail, 0)), time.Time{}, now)
		}
		u.limiter.Store(lim)
		close(u.swapped)
	}
	obs(sched.Requests, rl.Requests)
	obs(sched.InputTokens, rl.InputTokens)
	obs(sched.OutputTokens, rl.OutputTokens)
	obs(sched.TotalTokens, rl.Tokens)
}

// refillProbe tells a token-bucket server from a fixed-window one by its
// headers. In a fixed window the reset time stays put while the remaining
// count falls, then jumps a whole window ahead; in a bucket the reset (when
// the bucket will be full again) moves a little later with every request
// taken. A few such small moves while the remaining count falls mean a
// bucket. The default model (Step) is safe for both; the continuous one uses
// a bucket's capacity better.
type refillProbe struct {
	window time.Duration
	fixed  bool // decided, or configured continuous already

	mu       sync.Mutex
	last     llmapi.Limit
	evidence int
}

// observe folds in one response's request-limit header and reports whether
// the server was just found to refill continuously.
func (p *refillProbe) observe(l llmapi.Limit) bool {
	if !l.Known || l.Remaining < 0 || l.Reset.IsZero() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fixed {
		return false
	}
	prev := p.last
	p.last = l
	if !prev.Known || prev.Limit != l.Limit || prev.Reset.IsZero() {
		return false
	}
	moved := l.Reset.Sub(prev.Reset)
	switch {
	case l.Remaining < prev.Remaining && moved > 0 && moved < p.window/4:
		p.evidence++
	case l.Remaining < prev.Remaining && moved == 0:
		p.evidence = 0 // a fixed window's reset stays put
	}
	if p.evidence >= 3 {
		p.fixed = true
		return true
	}
	return false
}
