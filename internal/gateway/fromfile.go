package gateway

import (
	"math"

	"github.com/apiary-dev/apiary/internal/config"
	"github.com/apiary-dev/apiary/internal/llmapi"
)

// FromFile is the configuration an apiary.yaml states for the gateway:
// retries, AIMD, the breaker, the queue, prices, the agents' policies and
// the upstreams. What the file leaves out stays zero (the gateway's
// default); a caller lays its flags over the result. No key is read: the
// second result maps an upstream's name to the environment variable the
// file names for its key.
func FromFile(file *config.Config) (Config, map[string]string, error) {
	fg := file.Gateway
	cfg := Config{
		Agents:          map[string]AgentPolicy{},
		NoRetry:         fg.Retry.Disabled,
		MaxAttempts:     fg.Retry.MaxAttempts,
		RetryBase:       fg.Retry.Base.D(),
		RetryCap:        fg.Retry.Max.D(),
		MaxRetryWait:    fg.Retry.MaxWait.D(),
		NoAIMD:          fg.AIMD.Disabled,
		AIMDMin:         fg.AIMD.Min,
		AIMDFactor:      fg.AIMD.Decrease,
		AIMDCooldown:    fg.AIMD.Cooldown.D(),
		TTFBTarget:      fg.AIMD.TTFBTarget.D(),
		NoBreaker:       fg.Breaker.Disabled,
		BreakerFailFast: fg.Breaker.FailFast,
		BreakerRate:     fg.Breaker.FailureRate,
		BreakerMin:      fg.Breaker.MinRequests,
		BreakerWindow:   fg.Breaker.Window.D(),
		BreakerOpenFor:  fg.Breaker.OpenFor.D(),
		BreakerProbes:   fg.Breaker.Probes,
		NoIncludeUsage:  fg.InjectIncludeUsage != nil && !*fg.InjectIncludeUsage,
		MaxQueue:        fg.Queue.MaxWaiting,
	}
	if len(file.Prices) > 0 {
		over := map[string]llmapi.Price{}
		for m, p := range file.Prices {
			over[m] = llmapi.Price{Input: llmapi.USD(p.Input), Output: llmapi.USD(p.Output), CacheWrite5m: llmapi.USD(p.CacheWrite5m),
				CacheWrite1h: llmapi.USD(p.CacheWrite1h), CacheRead: llmapi.USD(p.CacheRead)}
		}
		cfg.Prices = llmapi.DefaultPrices().With(over)
	}
	for name, a := range fg.Agents {
		cfg.Agents[name] = AgentPolicy{Priority: a.Priority, MaxConcurrency: a.MaxConcurrency,
			BudgetMicroUSD: int64(math.Round(a.BudgetUSD * 1e6)), BudgetTokens: a.BudgetTokens}
	}
	keyEnv := map[string]string{}
	for _, u := range fg.Upstreams {
		up := Upstream{Name: u.Name, URL: u.URL, MaxConcurrency: u.MaxConcurrency, AgentMaxConcurrency: u.AgentMaxConc,
			RPM: u.Limits.RPM, TPM: u.Limits.TPM, ITPM: u.Limits.ITPM, OTPM: u.Limits.OTPM}
		if u.Provider != "" {
			p, err := llmapi.ParseProvider(u.Provider)
			if err != nil {
				return cfg, nil, err
			}
			up.Provider = p
		}
		if u.APIKeyEnv != "" {
			keyEnv[u.Name] = u.APIKeyEnv
		}
		cfg.Upstreams = append(cfg.Upstreams, up)
	}
	return cfg, keyEnv, nil
}
