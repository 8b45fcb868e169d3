package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// UsageError is a choice of options that do not go together (or one that
// is missing); the message names the flags of `apiary sim hedge`.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// TailSpec is the policy, method and percentiles of a tail analysis as
// `apiary sim hedge` takes them: a k-of-n policy (N and K) or a hedge
// (HedgeAt or HedgeAfterS, and optionally the hedged attempt's own
// latency), each counted only when its Set bit says it was given.
type TailSpec struct {
	N, K                 int
	HedgeAt, HedgeAfterS float64
	Hedge                Latency // MedianS and P90S of the hedged attempt
	Method               string  // auto, exact or monte-carlo
	Percentiles          string  // comma-separated, each in (0, 100)
	Set                  TailSpecSet
}

// TailSpecSet says which fields of a TailSpec were given.
type TailSpecSet struct {
	N, K, HedgeAt, HedgeAfterS, HedgeMedianS, HedgeP90S bool
}

// Apply sets p's policy, method and quantiles from s.
func (s TailSpec) Apply(p *TailParams) error {
	kOfN, hedge := s.Set.N || s.Set.K, s.Set.HedgeAt || s.Set.HedgeAfterS
	switch {
	case kOfN && hedge:
		return &UsageError{"give --n and --k, or --hedge-at or --hedge-after-s, not both"}
	case kOfN:
		if !s.Set.N {
			return &UsageError{"missing --n"}
		}
		if !s.Set.K {
			return &UsageError{"missing --k"}
		}
		p.Policy = TailPolicy{Kind: PolicyKOfN, N: s.N, K: s.K}
	case hedge:
		if s.Set.HedgeAt && s.Set.HedgeAfterS {
			return &UsageError{"give --hedge-at or --hedge-after-s, not both"}
		}
		p.Policy = TailPolicy{Kind: PolicyHedge, AfterQuantile: s.HedgeAt, AfterS: s.HedgeAfterS}
		if s.Set.HedgeAt && s.HedgeAt == 0 {
			return &UsageError{"--hedge-at must be in (0, 1), got 0"}
		}
		if s.Set.HedgeMedianS != s.Set.HedgeP90S {
			return &UsageError{"give --hedge-median-s and --hedge-p90-s together"}
		}
		if s.Set.HedgeMedianS {
			h := s.Hedge
			p.Policy.Hedge = &h
		}
	default:
		return &UsageError{"want a policy: --n and --k, or --hedge-at or --hedge-after-s"}
	}
	if !hedge && (s.Set.HedgeMedianS || s.Set.HedgeP90S) {
		return &UsageError{"--hedge-median-s and --hedge-p90-s need a hedge"}
	}
	switch s.Method {
	case "auto":
	case "exact":
		p.Method = MethodExact
	case "monte-carlo":
		p.Method = MethodMonteCarlo
	default:
		return &UsageError{fmt.Sprintf("--method must be auto, exact or monte-carlo, got %q", s.Method)}
	}
	qs, err := ParsePercentiles(s.Percentiles)
	if err != nil {
		return err
	}
	p.Quantiles = qs
	return nil
}

// ParsePercentiles reads "50,90,99.9" as the quantiles 0.5, 0.9, 0.999.
func ParsePercentiles(s string) ([]float64, error) {
	var qs []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0 && v < 100) {
			return nil, &UsageError{fmt.Sprintf("--percentiles must be a comma-separated list of numbers in (0, 100), got %q", s)}
		}
		// Rounded, so that 99.9 is 0.999 and not 0.9990000000000001.
		qs = append(qs, math.Round(v*1e10)/1e12)
	}
	return qs, nil
}
