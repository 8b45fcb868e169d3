package sim

import (
	"fmt"
	"math"
	"slices"
)

// Policy kinds.
const (
	// PolicyKOfN: N attempts start together; the task has its result once
	// K of them passed (the others are cancelled) and fails once fewer
	// than K can still pass. K = N is a barrier, K = 1 a race.
	PolicyKOfN = "k_of_n"
	// PolicyHedge: one attempt starts; if it is still running after
	// AfterS, a second (the hedge, possibly of another agent profile with
	// another latency) starts too; the first to pass is the result, the
	// other is cancelled. An attempt that fails before AfterS ends the
	// task as failed, as in the runtime, which hedges only a running
	// attempt.
	PolicyHedge = "hedge"
)

// TailPolicy is how a task's attempts are run.
type TailPolicy struct {
	Kind string `json:"kind"`
	// k of n; a validated hedge has N 2 and K 1.
	N int `json:"n,omitempty"`
	K int `json:"k,omitempty"`
	// Hedge: the delay, and the quantile of one attempt's latency it was
	// taken from when it was given as one.
	AfterS        float64  `json:"after_s,omitempty"`
	AfterQuantile float64  `json:"after_quantile,omitempty"`
	Hedge         *Latency `json:"hedge_latency,omitempty"` // nil: as the first attempt
}

// maxTailAttempts bounds N; the exact cost is O(N²) per point.
const maxTailAttempts = 100

// TailParams are the inputs of Tail.
type TailParams struct {
	Latency Latency
	Policy  TailPolicy
	// FailRate is the probability that an attempt fails its gates (its
	// outcome is known when it ends); 0: every attempt passes.
	FailRate float64
	// Rho is the share of the variance of log duration that the attempts
	// of one task have in common (a hard task is slow for every agent):
	// log X_i = mu + sigma(√Rho·Z0 + √(1−Rho)·Z_i). 0: independent
	// attempts. A Rho above 0 has no closed form: Monte Carlo.
	Rho float64
	// Quantiles to report, each in (0, 1); nil: 0.5, 0.9, 0.95, 0.99, 0.999.
	Quantiles []float64
	// Method is MethodExact, MethodMonteCarlo or "" (exact when Rho is 0).
	Method string
	// Trials and Seed of the Monte Carlo; 0 trials: 200,000.
	Trials int
	Seed   uint64
}

// Methods.
const (
	MethodExact      = "exact"
	MethodMonteCarlo = "monte_carlo"
)

// DefaultQuantiles are the percentiles Tail reports unless told others.
var DefaultQuantiles = []float64{0.5, 0.9, 0.95, 0.99, 0.999}

// TailReport is the answer of `apiary sim hedge`: the time to a task's
// result with one attempt and under the policy.
type TailReport struct {
	Latency  Latency    `json:"latency"`
	Policy   TailPolicy `json:"policy"`
	FailRate float64    `json:"fail_rate"`
	Rho      float64    `json:"rho"`
	// Method is how WithPolicy was computed; Single is always exact.
	Method string  `json:"method"`
	Trials int     `json:"trials,omitempty"`
	Seed   *uint64 `json:"seed,omitempty"`
	// Single is one attempt alone; WithPolicy the policy's attempts.
	Single     TailOutcome `json:"single"`
	WithPolicy TailOutcome `json:"with_policy"`
	// HedgeRate is the share of tasks whose hedge starts (hedge only).
	HedgeRate *float64 `json:"hedge_rate,omitempty"`
}

// TailOutcome is the distribution of the time to a task's result.
type TailOutcome struct {
	// PResult is the probability that the task gets a result at all (K
	// attempts pass).
	PResult     float64      `json:"p_result"`
	Percentiles []Percentile `json:"percentiles"`
	// MeanS is the mean time to a result, given one.
	MeanS float64 `json:"mean_s"`
	// AttemptS is the expected attempt-seconds spent on the task: every
	// attempt's running time until it ends or is cancelled.
	AttemptS float64 `json:"attempt_s"`
	// Monte Carlo only: the standard errors of MeanS and AttemptS.
	MeanStdErr    *float64 `json:"mean_std_err,omitempty"`
	AttemptStdErr *float64 `json:"attempt_std_err,omitempty"`
}

// Percentile is the Q-quantile of the time to a result. S is nil when the
// task gets no result with probability above 1 − Q. A Monte Carlo
// estimate has a 95% confidence interval from the order statistics.
type Percentile struct {
	Q      float64  `json:"q"`
	S      *float64 `json:"s"`
	Low95  *float64 `json:"ci95_low_s,omitempty"`
	High95 *float64 `json:"ci95_high_s,omitempty"`
}

// validate checks p and fills in the defaults.
func (p *TailParams) validate() error {
	if err := p.Latency.validate(""); err != nil {
		return err
	}
	if err := checkProb("fail-rate", p.FailRate); err != nil {
		return err
	}
	if p.FailRate == 1 {
		return paramErr("fail-rate", p.FailRate, "below 1")
	}
	if err := checkProb("rho", p.Rho); err != nil {
		return err
	}
	pol := &p.Policy
	switch pol.Kind {
	case PolicyKOfN:
		if pol.N < 1 || pol.N > maxTailAttempts {
			return paramErr("n", pol.N, fmt.Sprintf("in [1, %d]", maxTailAttempts))
		}
		if pol.K < 1 || pol.K > pol.N {
			return paramErr("k", pol.K, "in [1, n]")
		}
	case PolicyHedge:
		pol.N, pol.K = 2, 1
		if pol.Hedge != nil {
			if err := pol.Hedge.validate("hedge-"); err != nil {
				return err
			}
		}
		if pol.AfterQuantile != 0 {
			if !(pol.AfterQuantile > 0 && pol.AfterQuantile < 1) {
				return paramErr("hedge-at", pol.AfterQuantile, "in (0, 1)")
			}
			pol.AfterS = p.Latency.dist().quantile(pol.AfterQuantile)
		}
		if !(pol.AfterS > 0 && pol.AfterS <= 1e12) {
			return paramErr("hedge-after-s", pol.AfterS, "in (0, 1e12]")
		}
	default:
		return paramErr("policy", pol.Kind, "k_of_n or hedge")
	}
	if p.Quantiles == nil {
		p.Quantiles = DefaultQuantiles
	}
	if len(p.Quantiles) > 100 {
		return paramErr("percentiles", len(p.Quantiles), "at most 100 values")
	}
	for _, q := range p.Quantiles {
		if !(q > 0 && q < 1) {
			return paramErr("percentiles", q*100, "each in (0, 100)")
		}
	}
	switch p.Method {
	case "":
		p.Method = MethodExact
		if p.Rho > 0 {
			p.Method = MethodMonteCarlo
		}
	case MethodExact:
		if p.Rho > 0 {
			return paramErr("method", p.Method, "monte_carlo when rho > 0 (there is no closed form)")
		}
	case MethodMonteCarlo:
	default:
		return paramErr("method", p.Method, "exact or monte_carlo")
	}
	if p.Trials == 0 {
		p.Trials = 200_000
	}
	if p.Trials < 100 || p.Trials > 100_000_000 {
		return paramErr("trials", p.Trials, "in [100, 1e8]")
	}
	return nil
}

// Tail computes the time to a task's result with one attempt and under
// p's policy. Without correlation (Rho 0) the distributions have closed
// forms: percentiles by bisection on the CDF, means and attempt-seconds
// by numerical integration of survival functions. Otherwise, or when
// asked, the policy is simulated with a fixed seed.
func Tail(p TailParams) (*TailReport, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	m := newTailModel(p)
	r := &TailReport{Latency: p.Latency, Policy: p.Policy, FailRate: p.FailRate, Rho: p.Rho, Method: p.Method}
	one := tailModel{a: m.a, pass: m.pass, pol: TailPolicy{Kind: PolicyKOfN, N: 1, K: 1}}
	r.Single = one.exact(p.Quantiles)
	if p.Policy.Kind == PolicyHedge {
		h := m.a.sf(p.Policy.AfterS)
		r.HedgeRate = &h
	}
	if p.Method == MethodExact {
		r.WithPolicy = m.exact(p.Quantiles)
		return r, nil
	}
	r.Trials, r.Seed = p.Trials, &p.Seed
	r.WithPolicy = m.monteCarlo(p.Quantiles, p.Trials, p.Seed)
	return r, nil
}

// tailModel is a validated policy on attempts of latency a (the hedge's
// b), each passing with probability pass.
type tailModel struct {
	a, b dist
	pass float64
	rho  float64
	pol  TailPolicy
}

func newTailModel(p TailParams) tailModel {
	m := tailModel{a: p.Latency.dist(), pass: 1 - p.FailRate, rho: p.Rho, pol: p.Policy}
	m.b = m.a
	if p.Policy.Hedge != nil {
		m.b = p.Policy.Hedge.dist()
	}
	return m
}

// result is P(the task has its result by t) for independent attempts.
func (m tailModel) result(t float64) float64 {
	if m.pol.Kind == PolicyHedge {
		d := m.pol.AfterS
		g := m.pass * m.a.cdf(t)
		if t > d {
			// The first has not passed by t yet was running at d, and the
			// hedge passed within t − d.
			g += m.undecidedFirst(d, t) * m.pass * m.b.cdf(t-d)
		}
		return g
	}
	return binomialAtLeast(m.pol.N, m.pol.K, m.pass*m.a.cdf(t))
}

// undecidedFirst is P(the first attempt ran past d and has not passed by
// t), t >= d.
func (m tailModel) undecidedFirst(d, t float64) float64 {
	return max(0, m.a.sf(d)-m.pass*(m.a.cdf(t)-m.a.cdf(d)))
}

// pResult is P(the task ever gets its result).
func (m tailModel) pResult() float64 {
	if m.pol.Kind == PolicyHedge {
		return m.pass + m.a.sf(m.pol.AfterS)*(1-m.pass)*m.pass
	}
	return binomialAtLeast(m.pol.N, m.pol.K, m.pass)
}

// running is the expected number of attempts running at t: their sum
// over time is the attempt-seconds.
func (m tailModel) running(t float64) float64 {
	if m.pol.Kind == PolicyHedge {
		d := m.pol.AfterS
		if t <= d {
			return m.a.sf(t)
		}
		// The first runs unless the hedge passed; the hedge runs unless
		// the first passed (it started, so the first was running at d).
		return m.a.sf(t)*(1-m.pass*m.b.cdf(t-d)) + m.b.sf(t-d)*m.undecidedFirst(d, t)
	}
	// An attempt runs at t if it has not ended and the others leave the
	// task undecided: fewer than K passed and at most N−K failed.
	n, k := m.pol.N, m.pol.K
	f := m.a.cdf(t)
	pPass, pFail := m.pass*f, (1-m.pass)*f
	passed := binomialPMF(n-1, pPass)
	undecided := 0.0
	for a := 0; a < k && a < n; a++ {
		if passed[a] == 0 {
			continue
		}
		rest := n - 1 - a
		c := 1.0 // P(at most n−k of the rest failed), given a passed
		if pFail > 0 && rest > n-k {
			c = 1 - binomialAtLeast(rest, n-k+1, pFail/(1-pPass))
		}
		undecided += passed[a] * c
	}
	return float64(n) * m.a.sf(t) * undecided
}

// horizon is a time by which every attempt has ended but for a
// probability below 1e-13; floor a time before which none has but for
// one below 1e-16, and no hedge has started: until floor, started
// attempts run.
func (m tailModel) horizon() (floor, horizon float64, started int) {
	floor = m.a.quantile(1e-16)
	horizon = m.a.quantile(1 - 1e-13/float64(m.pol.N))
	if m.pol.Kind == PolicyHedge {
		floor = min(floor, m.pol.AfterS)
		horizon = max(horizon, m.pol.AfterS+m.b.quantile(1-1e-13))
		return floor, horizon, 1
	}
	return floor, horizon, m.pol.N
}

// exact computes the outcome in closed form (independent attempts).
func (m tailModel) exact(qs []float64) TailOutcome {
	o := TailOutcome{PResult: m.pResult()}
	floor, hi, started := m.horizon()
	cuts := []float64{floor, hi}
	if m.pol.Kind == PolicyHedge && m.pol.AfterS > floor && m.pol.AfterS < hi {
		cuts = []float64{floor, m.pol.AfterS, hi}
	}
	// Before floor nothing has ended and no result exists.
	o.AttemptS = floor*float64(started) + integrateLog(m.running, cuts)
	if o.PResult > 0 {
		waiting := func(t float64) float64 { return max(0, o.PResult-m.result(t)) }
		o.MeanS = (floor*o.PResult + integrateLog(waiting, cuts)) / o.PResult
	}
	for _, q := range qs {
		pc := Percentile{Q: q}
		if q < o.PResult*(1-1e-12) {
			s := invert(m.result, q, floor, hi)
			pc.S = &s
		}
		o.Percentiles = append(o.Percentiles, pc)
	}
	return o
}

// integrateLog integrates f over [cuts[0], cuts[len−1]] by Simpson's rule
// in log t on each piece between consecutive cuts (all > 0).
func integrateLog(f func(float64) float64, cuts []float64) float64 {
	const n = 2048 // even
	sum := 0.0
	for i := 1; i < len(cuts); i++ {
		a, b := math.Log(cuts[i-1]), math.Log(cuts[i])
		h := (b - a) / n
		s := 0.0
		for j := 0; j <= n; j++ {
			t := math.Exp(a + float64(j)*h)
			w := 2.0
			switch {
			case j == 0 || j == n:
				w = 1
			case j%2 == 1:
				w = 4
			}
			s += w * f(t) * t
		}
		sum += s * h / 3
	}
	return sum
}

// invert returns the least t in [lo, hi] with g(t) >= q for a
// non-decreasing g, by bisection on log t.
func invert(g func(float64) float64, q, lo, hi float64) float64 {
	a, b := math.Log(lo), math.Log(hi)
	for range 200 {
		mid := (a + b) / 2
		if mid == a || mid == b {
			break
		}
		if g(math.Exp(mid)) >= q {
			b = mid
		} else {
			a = mid
		}
	}
	return math.Exp(b)
}

// binomialPMF is P(Bin(n, p) = i), i = 0..n, for n <= maxTailAttempts:
// C(n, i)·p^i·(1−p)^(n−i) by products, without the logarithms failures
// needs for large n. A term below the smallest float64 is 0.
func binomialPMF(n int, p float64) []float64 {
	pmf := make([]float64, n+1)
	q := 1 - p
	// pmf[i] = C(n, i)·p^i for now, then times (1−p)^(n−i) from the top.
	c, pi := 1.0, 1.0
	for i := 0; i <= n; i++ {
		pmf[i] = c * pi
		c = c * float64(n-i) / float64(i+1)
		pi *= p
	}
	qi := 1.0
	for i := n; i >= 0; i-- {
		pmf[i] *= qi
		qi *= q
	}
	return pmf
}

// binomialAtLeast is P(Bin(n, p) >= k).
func binomialAtLeast(n, k int, p float64) float64 {
	if k <= 0 {
		return 1
	}
	if k > n {
		return 0
	}
	pmf := binomialPMF(n, p)
	// Sum the shorter side, the smaller terms first.
	if k > n/2 {
		s := 0.0
		for i := n; i >= k; i-- {
			s += pmf[i]
		}
		return min(s, 1)
	}
	s := 0.0
	for i := range k {
		s += pmf[i]
	}
	return max(0, 1-s)
}

// sortedCopy returns vs sorted.
func sortedCopy(vs []float64) []float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	return s
}
