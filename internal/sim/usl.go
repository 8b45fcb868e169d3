package sim

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// USL is the universal scalability law with an Amdahl serial fraction, as
// the capacity-planning model states it:
//
//	speedup(M) = 1 / ((1−f) + f/M + σ(M−1) + κM(M−1))
//
// F is the parallelisable fraction of the work, Sigma the contention
// (serialisation) cost per extra worker and Kappa the coherency (crosstalk)
// cost per pair of workers. The zero value is the single-worker law
// speedup(M) = 1.
type USL struct {
	F     float64 `json:"f"`
	Sigma float64 `json:"sigma"`
	Kappa float64 `json:"kappa"`
}

// Validate reports a *ParamError unless F is in [0, 1] and Sigma and Kappa
// are finite and non-negative.
func (u USL) Validate() error {
	if err := checkProb("f", u.F); err != nil {
		return err
	}
	if err := checkNonNeg("sigma", u.Sigma); err != nil {
		return err
	}
	return checkNonNeg("kappa", u.Kappa)
}

// denom is T_M/T_1, the relative time with m workers.
func (u USL) denom(m float64) float64 {
	return (1 - u.F) + u.F/m + u.Sigma*(m-1) + u.Kappa*m*(m-1)
}

// Speedup returns T_1/T_M for m >= 1 workers (m may be fractional). For a
// valid USL it never exceeds 1/(1−F).
func (u USL) Speedup(m float64) float64 { return 1 / u.denom(m) }

// MStar returns the model's M* = sqrt((F−Sigma)/Kappa), at least 1; +Inf if
// Kappa is 0 and F > Sigma. It is the optimum of Gunther's USL written as
// 1/speedup = (1−f) + f/M + σ(M−1)/M + κ(M−1); for the speedup above it is
// not the peak (see Peak).
func (u USL) MStar() float64 {
	switch {
	case u.F <= u.Sigma:
		return 1
	case u.Kappa == 0:
		return math.Inf(1)
	}
	return max(1, math.Sqrt((u.F-u.Sigma)/u.Kappa))
}

// Peak returns the worker count M >= 1 (real-valued) that maximises Speedup,
// or +Inf if speedup grows without bound (Sigma = Kappa = 0 and F > 0).
// 1/speedup is convex in M, so the peak is where its derivative
// −F/M² + Sigma + Kappa(2M−1) is zero, or M = 1 if that is already >= 0.
func (u USL) Peak() float64 {
	deriv := func(m float64) float64 { return -u.F/(m*m) + u.Sigma + u.Kappa*(2*m-1) }
	if deriv(1) >= 0 {
		return 1
	}
	if u.Sigma == 0 && u.Kappa == 0 {
		return math.Inf(1)
	}
	lo, hi := 1.0, 2.0
	for deriv(hi) < 0 {
		lo, hi = hi, hi*2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if deriv(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// BestInteger returns the whole number of workers with the highest speedup
// (the smaller on a tie); -1 if Peak is unbounded.
func (u USL) BestInteger() int {
	p := u.Peak()
	if math.IsInf(p, 1) || p > math.MaxInt32 {
		return -1
	}
	lo := int(math.Floor(p))
	if u.Speedup(float64(lo+1)) > u.Speedup(float64(lo)) {
		return lo + 1
	}
	return lo
}

// USLReport is the answer of `apiary sim usl`. Fields that are unbounded are
// null in JSON.
type USLReport struct {
	USL
	T1             float64   `json:"t1"`
	M              float64   `json:"m"`
	Speedup        float64   `json:"speedup"`
	TM             float64   `json:"t_m"`
	MStar          *float64  `json:"m_star"`
	SpeedupAtMStar *float64  `json:"speedup_at_m_star"`
	MPeak          *float64  `json:"m_peak"`
	SpeedupAtMPeak *float64  `json:"speedup_at_m_peak"`
	BestM          *int      `json:"best_m"`
	SpeedupAtBestM *float64  `json:"speedup_at_best_m"`
	SpeedupBound   *float64  `json:"speedup_bound"`
	Fit            *FitStats `json:"fit,omitempty"`
}

// Analyze evaluates u at m workers with single-worker time t1 seconds.
func (u USL) Analyze(t1, m float64) (USLReport, error) {
	if err := u.Validate(); err != nil {
		return USLReport{}, err
	}
	if !(t1 > 0 && t1 <= math.MaxFloat64) {
		return USLReport{}, paramErr("t1", t1, "finite and > 0 seconds")
	}
	if !(m >= 1 && m <= 1e9) {
		return USLReport{}, paramErr("m", m, "in [1, 1e9]")
	}
	r := USLReport{USL: u, T1: t1, M: m, Speedup: u.Speedup(m)}
	r.TM = t1 / r.Speedup
	finite := func(v float64) *float64 {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil
		}
		return &v
	}
	ms := u.MStar()
	r.MStar = finite(ms)
	if r.MStar != nil {
		r.SpeedupAtMStar = finite(u.Speedup(ms))
	}
	if p := u.Peak(); !math.IsInf(p, 1) {
		r.MPeak = finite(p)
		r.SpeedupAtMPeak = finite(u.Speedup(p))
		if b := u.BestInteger(); b > 0 {
			r.BestM = &b
			r.SpeedupAtBestM = finite(u.Speedup(float64(b)))
		}
	}
	if u.F < 1 {
		r.SpeedupBound = finite(1 / (1 - u.F))
	}
	return r, nil
}

// WriteText prints the report for people.
func (r USLReport) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.Fit != nil {
		fmt.Fprintf(&b, "fit:        %d points, rmse %.4g s, r2 %.4f\n", r.Fit.Points, r.Fit.RMSE, r.Fit.R2)
	}
	fmt.Fprintf(&b, "law:        f %.4g, sigma %.4g, kappa %.4g, T1 %.4g s\n", r.F, r.Sigma, r.Kappa, r.T1)
	fmt.Fprintf(&b, "at M = %g:   speedup %.4g, T_M %.4g s\n", r.M, r.Speedup, r.TM)
	if r.MStar != nil {
		fmt.Fprintf(&b, "M*:         %.4g = sqrt((f-sigma)/kappa), speedup there %.4g\n", *r.MStar, *r.SpeedupAtMStar)
	} else {
		b.WriteString("M*:         unbounded (kappa = 0)\n")
	}
	if r.MPeak != nil {
		fmt.Fprintf(&b, "peak:       speedup %.4g at M %.4g", *r.SpeedupAtMPeak, *r.MPeak)
		if r.BestM != nil {
			fmt.Fprintf(&b, "; best whole M %d (speedup %.4g)", *r.BestM, *r.SpeedupAtBestM)
		}
		b.WriteString("\n")
		if r.MStar != nil && math.Abs(*r.MStar-*r.MPeak) > 0.01**r.MPeak {
			b.WriteString("note:       M* (the model's formula) is not where this speedup curve peaks\n")
		}
	} else {
		b.WriteString("peak:       none: speedup grows with M (sigma = kappa = 0)\n")
	}
	if r.SpeedupBound != nil {
		fmt.Fprintf(&b, "bound:      speedup < 1/(1-f) = %.4g\n", *r.SpeedupBound)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
