package sim

import (
	"math"
	"math/rand/v2"
)

// Latency is the distribution of one attempt's duration: lognormal with
// median MedianS and 90th percentile P90S (P90S > MedianS) — the task
// model of `apiary sim swarm` — and, with probability StragglerProb, a
// straggler that takes StragglerFactor times as long (a stuck tool call,
// a rate-limit pause, a model that wanders off).
type Latency struct {
	MedianS         float64 `json:"median_s"`
	P90S            float64 `json:"p90_s"`
	StragglerProb   float64 `json:"straggler_prob,omitempty"`
	StragglerFactor float64 `json:"straggler_factor,omitempty"`
}

// validate names the first bad field as its flag, with prefix in front
// ("hedge-" for the hedged attempt's latency).
func (l Latency) validate(prefix string) error {
	if !(l.MedianS > 0 && l.MedianS <= 1e9) {
		return paramErr(prefix+"median-s", l.MedianS, "in (0, 1e9]")
	}
	if !(l.P90S > l.MedianS && l.P90S <= 1e3*l.MedianS) {
		return paramErr(prefix+"p90-s", l.P90S, "in (median, 1000 × median]")
	}
	if err := checkProb(prefix+"straggler-prob", l.StragglerProb); err != nil {
		return err
	}
	if l.StragglerProb > 0 && !(l.StragglerFactor >= 1 && l.StragglerFactor <= 1e3) {
		return paramErr(prefix+"straggler-factor", l.StragglerFactor, "in [1, 1000] when straggler-prob > 0")
	}
	return nil
}

// dist is a Latency ready for evaluation: log X = mu + sigma·Z, plus lnx
// with probability q.
type dist struct {
	mu, sigma, q, lnx float64
}

func (l Latency) dist() dist {
	d := dist{mu: math.Log(l.MedianS), sigma: lognormalSigma(l.MedianS, l.P90S)}
	if l.StragglerProb > 0 {
		d.q, d.lnx = l.StragglerProb, math.Log(l.StragglerFactor)
	}
	return d
}

// cdf is P(X <= t); sf is P(X > t), each accurate in its own tail.
func (d dist) cdf(t float64) float64 {
	if t <= 0 {
		return 0
	}
	z := (math.Log(t) - d.mu) / (d.sigma * math.Sqrt2)
	c := 0.5 * math.Erfc(-z)
	if d.q > 0 {
		c = (1-d.q)*c + d.q*0.5*math.Erfc(-(z-d.lnx/(d.sigma*math.Sqrt2)))
	}
	return c
}

func (d dist) sf(t float64) float64 {
	if t <= 0 {
		return 1
	}
	z := (math.Log(t) - d.mu) / (d.sigma * math.Sqrt2)
	s := 0.5 * math.Erfc(z)
	if d.q > 0 {
		s = (1-d.q)*s + d.q*0.5*math.Erfc(z-d.lnx/(d.sigma*math.Sqrt2))
	}
	return s
}

// quantile is the q-quantile, 0 < q < 1: closed form for a lognormal,
// bisection on log t for a mixture with stragglers.
func (d dist) quantile(q float64) float64 {
	ln := func(q float64) float64 { return d.mu - math.Sqrt2*d.sigma*math.Erfcinv(2*q) }
	if d.q == 0 {
		return math.Exp(ln(q))
	}
	// The mixture's quantile lies between the two components' ones.
	lo, hi := ln(q), ln(q)+d.lnx
	for range 200 {
		m := (lo + hi) / 2
		if m == lo || m == hi {
			break
		}
		if d.cdf(math.Exp(m)) >= q {
			hi = m
		} else {
			lo = m
		}
	}
	return math.Exp(hi)
}

// sample draws X with the standard normal z for its lognormal part (so
// callers can correlate attempts) and rng for the straggler draw.
func (d dist) sample(rng *rand.Rand, z float64) float64 {
	x := math.Exp(d.mu + d.sigma*z)
	if d.q > 0 && rng.Float64() < d.q {
		x *= math.Exp(d.lnx)
	}
	return x
}
