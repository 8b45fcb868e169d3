package gateway

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
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
	// pacer paces requests by the limits configured and learned from the
	// server's headers.
	pacer   *sched.Pacer
	breaker *sched.Breaker // nil when disabled
	backoff *sched.Backoff

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
	// --limit-window is the period of configured limits only; a learned
	// limit's period is learned from the server's resets.
	per := u.Window
	if per <= 0 {
		per = time.Minute
	}
	up.pacer = sched.NewPacer(sched.PacerConfig{
		Requests:  sched.Rate{Limit: u.RPM, Per: per},
		Input:     sched.Rate{Limit: u.ITPM, Per: per},
		Output:    sched.Rate{Limit: u.OTPM, Per: per},
		Total:     sched.Rate{Limit: u.TPM, Per: per},
		AgingStep: cfg.AgingStep,
		Now:       cfg.Now,
	})
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

// observations converts a response's rate-limit headers into the pacer's
// figures, per dimension.
func observations(rl llmapi.RateLimits) [4]sched.Observation {
	conv := func(l llmapi.Limit) sched.Observation {
		if !l.Known {
			return sched.Observation{Limit: -1, Remaining: -1}
		}
		return sched.Observation{Limit: l.Limit, Remaining: l.Remaining, Reset: l.Reset, Precision: l.ResetPrecision, Relative: l.ResetRelative}
	}
	var o [4]sched.Observation
	o[sched.Requests] = conv(rl.Requests)
	o[sched.InputTokens] = conv(rl.InputTokens)
	o[sched.OutputTokens] = conv(rl.OutputTokens)
	o[sched.TotalTokens] = conv(rl.Tokens)
	return o
}
