package sim

import "math"

// FanoutReport is the answer of `apiary sim barrier` and `apiary sim
// quorum`: the probability that enough of N independent tasks finish by the
// time a single task finishes with probability F (its F-quantile).
type FanoutReport struct {
	N int     `json:"n"`
	K int     `json:"k"` // tasks needed: N for a barrier
	F float64 `json:"f"`
	P float64 `json:"p"` // P(at least K of N done by the F-quantile)
}

// Barrier returns P(all n tasks finish by their f-quantile) = f^n.
func Barrier(n int, f float64) (FanoutReport, error) {
	if n < 1 || n > maxVoters {
		return FanoutReport{}, paramErr("n", n, "in [1, 1000000]")
	}
	if err := checkProb("f", f); err != nil {
		return FanoutReport{}, err
	}
	return FanoutReport{N: n, K: n, F: f, P: math.Pow(f, float64(n))}, nil
}

// Quorum returns P(at least k of n tasks finish by their f-quantile), the
// upper tail of Binomial(n, f).
func Quorum(n, k int, f float64) (FanoutReport, error) {
	if n < 1 || n > maxVoters {
		return FanoutReport{}, paramErr("n", n, "in [1, 1000000]")
	}
	if k < 1 || k > n {
		return FanoutReport{}, paramErr("k", k, "in [1, n]")
	}
	if err := checkProb("f", f); err != nil {
		return FanoutReport{}, err
	}
	pmf := failures(n, f, 0)
	s := 0.0
	for i := k; i <= n; i++ {
		s += pmf[i]
	}
	return FanoutReport{N: n, K: k, F: f, P: min(s, 1)}, nil
}
