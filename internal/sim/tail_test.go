package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// straggler is the book's straggler case as we set it: attempts of median
// 10 s and p90 15 s, of which 2% straggle five times as long. One
// attempt's p99 is then the stragglers' own median, 50 s (P(X > 50) is
// 0.98·P(body > 50) + 0.02·½, and the body almost never passes 50 s):
// "p99 above 45 s".
var straggler = Latency{MedianS: 10, P90S: 15, StragglerProb: 0.02, StragglerFactor: 5}

func mustTail(t *testing.T, p TailParams) *TailReport {
	t.Helper()
	r, err := Tail(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rel reports whether got is within tol of want, relatively.
func rel(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

func TestTailStragglerExample(t *testing.T) {
	t.Parallel()
	r := mustTail(t, TailParams{Latency: straggler, Policy: TailPolicy{Kind: PolicyHedge, AfterQuantile: 0.95}})
	one, hedged := r.Single.Percentiles, r.WithPolicy.Percentiles
	if q := one[3]; q.Q != 0.99 || !(*q.S > 45) || !rel(*q.S, 50, 1e-4) {
		t.Errorf("one attempt's p99 = %v, want above 45 s: 50.00 s", *q.S)
	}
	// Hedging at one attempt's p95 (18.08 s) starts a hedge for 5% of
	// tasks, cuts p99 to 28.13 s and p99.9 from 84.14 to 35.55 s, and
	// spends fewer attempt-seconds than one attempt (stragglers are cut).
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"hedge delay", r.Policy.AfterS, 18.08},
		{"hedge rate", *r.HedgeRate, 0.05},
		{"one p50", *one[0].S, 10.08},
		{"one p99.9", *one[4].S, 84.14},
		{"hedged p50", *hedged[0].S, 10.08},
		{"hedged p95", *hedged[2].S, 18.08},
		{"hedged p99", *hedged[3].S, 28.13},
		{"hedged p99.9", *hedged[4].S, 35.55},
		{"one mean", r.Single.MeanS, 11.35},
		{"hedged mean", r.WithPolicy.MeanS, 10.88},
		{"hedged attempt-seconds", r.WithPolicy.AttemptS, 11.16},
	} {
		if math.Abs(c.got-c.want) > 0.005*max(1, math.Abs(c.want))/5 {
			t.Errorf("%s = %.6g, want %.4g", c.name, c.got, c.want)
		}
	}
	// The same, by an independent simulation.
	checkAgainstNaive(t, "straggler hedge", TailParams{Latency: straggler, Policy: r.Policy}, r, 200_000)
}

// TestTailMatchesFanout ties k-of-N to the book's fan-out numbers: the
// probability that 6 of 8 attempts are done by one attempt's p90 is
// 0.9619 (Quorum), so the 0.9619-quantile of 6 of 8 is one attempt's p90;
// all 10 of 10 are done by the p95 with probability 0.95^10 = 0.5987.
func TestTailMatchesFanout(t *testing.T) {
	t.Parallel()
	lat := Latency{MedianS: 10, P90S: 15}
	q, _ := Quorum(8, 6, 0.9)
	r := mustTail(t, TailParams{Latency: lat, Policy: TailPolicy{Kind: PolicyKOfN, N: 8, K: 6}, Quantiles: []float64{q.P}})
	if s := *r.WithPolicy.Percentiles[0].S; !rel(s, 15, 1e-9) || !sig3(q.P, 0.9619) {
		t.Errorf("6 of 8: the %.6g-quantile is %.12g s, want the p90 of one attempt, 15 s", q.P, s)
	}
	b, _ := Barrier(10, 0.95)
	r = mustTail(t, TailParams{Latency: lat, Policy: TailPolicy{Kind: PolicyKOfN, N: 10, K: 10}, Quantiles: []float64{b.P, 0.95}})
	if s, p95 := *r.WithPolicy.Percentiles[0].S, *r.Single.Percentiles[1].S; !rel(s, p95, 1e-9) || !sig3(b.P, 0.5987) {
		t.Errorf("10 of 10: the %.6g-quantile is %.12g s, want one attempt's p95 %.12g s", b.P, s, p95)
	}
}

// TestTailClosedForms checks the numerical machinery against formulas
// that need none: the mean of a lognormal mixture, the order statistics
// of a race (1 of n: F⁻¹(1 − (1−q)^(1/n))) and a barrier (n of n:
// F⁻¹(q^(1/n))), the median of 2 of 3 (one attempt's median), a
// barrier's attempt-seconds (n × the mean) and the probability of a
// result with failing attempts.
func TestTailClosedForms(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(21, 22))
	for iter := range 20 {
		lat := Latency{MedianS: 1 + 100*r.Float64()}
		lat.P90S = lat.MedianS * (1.05 + 3*r.Float64())
		if iter%2 == 1 {
			lat.StragglerProb, lat.StragglerFactor = 0.1*r.Float64(), 1+9*r.Float64()
		}
		d := lat.dist()
		name := fmt.Sprintf("%+v", lat)
		sigma := math.Log(lat.P90S/lat.MedianS) / 1.2815515655446004
		mean := lat.MedianS * math.Exp(sigma*sigma/2) * (1 - lat.StragglerProb + lat.StragglerProb*lat.StragglerFactor)
		n := 2 + r.IntN(8)
		qs := []float64{0.1, 0.5, 0.9, 0.99}
		race := mustTail(t, TailParams{Latency: lat, Policy: TailPolicy{Kind: PolicyKOfN, N: n, K: 1}, Quantiles: qs})
		barrier := mustTail(t, TailParams{Latency: lat, Policy: TailPolicy{Kind: PolicyKOfN, N: n, K: n}, Quantiles: qs})
		if !rel(race.Single.MeanS, mean, 1e-7) || !rel(race.Single.AttemptS, mean, 1e-7) {
			t.Fatalf("%s: one attempt's mean %.12g, attempt-seconds %.12g; closed form %.12g", name, race.Single.MeanS, race.Single.AttemptS, mean)
		}
		if !rel(barrier.WithPolicy.AttemptS, float64(n)*mean, 1e-7) {
			t.Fatalf("%s: %d of %d attempt-seconds %.12g, want %.12g", name, n, n, barrier.WithPolicy.AttemptS, float64(n)*mean)
		}
		for i, q := range qs {
			if want := d.quantile(1 - math.Pow(1-q, 1/float64(n))); !rel(*race.WithPolicy.Percentiles[i].S, want, 1e-9) {
				t.Fatalf("%s: race of %d, q %g: %.12g, want %.12g", name, n, q, *race.WithPolicy.Percentiles[i].S, want)
			}
			if want := d.quantile(math.Pow(q, 1/float64(n))); !rel(*barrier.WithPolicy.Percentiles[i].S, want, 1e-9) {
				t.Fatalf("%s: barrier of %d, q %g: %.12g, want %.12g", name, n, q, *barrier.WithPolicy.Percentiles[i].S, want)
			}
		}
		two := mustTail(t, TailParams{Latency: lat, Policy: TailPolicy{Kind: PolicyKOfN, N: 3, K: 2}, Quantiles: []float64{0.5}})
		if !rel(*two.WithPolicy.Percentiles[0].S, *two.Single.Percentiles[0].S, 1e-9) {
			t.Fatalf("%s: 2 of 3 median %.12g, one attempt's %.12g", name, *two.WithPolicy.Percentiles[0].S, *two.Single.Percentiles[0].S)
		}
		fail := 0.5 * r.Float64()
		k := 1 + r.IntN(n)
		kn := mustTail(t, TailParams{Latency: lat, Policy: TailPolicy{Kind: PolicyKOfN, N: n, K: k}, FailRate: fail})
		want := 0.0
		for i := k; i <= n; i++ {
			want += binom(n, i) * math.Pow(1-fail, float64(i)) * math.Pow(fail, float64(n-i))
		}
		if !rel(kn.WithPolicy.PResult, want, 1e-9) {
			t.Fatalf("%s: P(%d of %d pass at fail rate %g) = %.12g, want %.12g", name, k, n, fail, kn.WithPolicy.PResult, want)
		}
		h := mustTail(t, TailParams{Latency: lat, Policy: TailPolicy{Kind: PolicyHedge, AfterQuantile: 0.8}, FailRate: fail})
		if want := (1 - fail) + 0.2*fail*(1-fail); !rel(h.WithPolicy.PResult, want, 1e-9) || !rel(*h.HedgeRate, 0.2, 1e-9) {
			t.Fatalf("%s: hedge at p80, fail rate %g: P(result) %.12g (want %.12g), hedge rate %.12g", name, fail, h.WithPolicy.PResult, want, *h.HedgeRate)
		}
	}
}

func binom(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return math.Exp(a - b - c)
}

// naive simulates a policy from its definition, written apart from the
// package's Monte Carlo: every attempt that starts gets a start time, an
// end and an outcome, and the task is decided at the first end at which K
// attempts have passed or more than (attempts started or to come) − K
// have failed. It returns each trial's time to a result (+Inf: none) and
// attempt-seconds.
func naive(r *rand.Rand, p TailParams, trials int) (ts, costs []float64) {
	draw := func(l Latency, z0 float64) float64 {
		sigma := math.Log(l.P90S/l.MedianS) / 1.2815515655446004
		z := math.Sqrt(p.Rho)*z0 + math.Sqrt(1-p.Rho)*r.NormFloat64()
		x := l.MedianS * math.Exp(sigma*z)
		if r.Float64() < l.StragglerProb {
			x *= l.StragglerFactor
		}
		return x
	}
	type att struct {
		start, end float64
		pass       bool
	}
	for range trials {
		z0 := r.NormFloat64()
		var as []att
		n, k := p.Policy.N, p.Policy.K
		if p.Policy.Kind == PolicyHedge {
			n, k = 2, 1
			x := draw(p.Latency, z0)
			as = append(as, att{0, x, r.Float64() >= p.FailRate})
			if x > p.Policy.AfterS {
				h := p.Latency
				if p.Policy.Hedge != nil {
					h = *p.Policy.Hedge
				}
				as = append(as, att{p.Policy.AfterS, p.Policy.AfterS + draw(h, z0), r.Float64() >= p.FailRate})
			} else {
				n = 1 // the runtime hedges only a running attempt
			}
		} else {
			for range n {
				as = append(as, att{0, draw(p.Latency, z0), r.Float64() >= p.FailRate})
			}
		}
		ends := make([]att, len(as))
		copy(ends, as)
		slices.SortFunc(ends, func(a, b att) int {
			if a.end < b.end {
				return -1
			}
			return 1
		})
		t, decided := math.Inf(1), ends[len(ends)-1].end
		passed, failed := 0, 0
		for _, a := range ends {
			if a.pass {
				passed++
			} else {
				failed++
			}
			if passed >= k {
				t, decided = a.end, a.end
				break
			}
			if n-failed < k {
				decided = a.end
				break
			}
		}
		c := 0.0
		for _, a := range as {
			c += max(0, min(a.end, decided)-a.start)
		}
		ts, costs = append(ts, t), append(costs, c)
	}
	return ts, costs
}

// checkAgainstNaive compares an exact report with the naive simulation:
// at each exact percentile the simulated share of results by then must be
// within 5 standard errors of its quantile; the probability of a result,
// the mean and the attempt-seconds within 5 standard errors.
func checkAgainstNaive(t *testing.T, name string, p TailParams, r *TailReport, trials int) {
	t.Helper()
	p.Policy = r.Policy // with the delay a quantile gives
	ts, costs := naive(rand.New(rand.NewPCG(uint64(len(name)), 99)), p, trials)
	n := float64(trials)
	for _, pc := range r.WithPolicy.Percentiles {
		if pc.S == nil {
			continue
		}
		by := 0
		for _, x := range ts {
			if x <= *pc.S {
				by++
			}
		}
		if se := math.Sqrt(pc.Q * (1 - pc.Q) / n); math.Abs(float64(by)/n-pc.Q) > 5*se+1e-9 {
			t.Errorf("%s: %.5g%% of simulated tasks have a result by the exact p%g %.6g s, want %g%% ± %.3g", name, 100*float64(by)/n, 100*pc.Q, *pc.S, 100*pc.Q, 500*se)
		}
	}
	var ok []float64
	for _, x := range ts {
		if !math.IsInf(x, 1) {
			ok = append(ok, x)
		}
	}
	pr := float64(len(ok)) / n
	if se := math.Sqrt(max(pr*(1-pr), 1/n) / n); math.Abs(pr-r.WithPolicy.PResult) > 5*se {
		t.Errorf("%s: simulated P(result) %.6g, exact %.6g", name, pr, r.WithPolicy.PResult)
	}
	m, mse := meanSE(ok)
	if math.Abs(m-r.WithPolicy.MeanS) > 5*mse {
		t.Errorf("%s: simulated mean %.6g ± %.3g, exact %.6g", name, m, mse, r.WithPolicy.MeanS)
	}
	c, cse := meanSE(costs)
	if math.Abs(c-r.WithPolicy.AttemptS) > 5*cse {
		t.Errorf("%s: simulated attempt-seconds %.6g ± %.3g, exact %.6g", name, c, cse, r.WithPolicy.AttemptS)
	}
}

func meanSE(xs []float64) (mean, se float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s, sq := 0.0, 0.0
	for _, x := range xs {
		s += x
		sq += x * x
	}
	n := float64(len(xs))
	mean = s / n
	return mean, math.Sqrt(max(0, sq/n-mean*mean) / n)
}

// randomTail draws random valid parameters of the policy kind given:
// stragglers or not, another hedge profile or not, failing attempts when
// failing.
func randomTail(r *rand.Rand, kind string, failing bool) TailParams {
	lat := Latency{MedianS: 1 + 50*r.Float64()}
	lat.P90S = lat.MedianS * (1.1 + 2*r.Float64())
	if r.IntN(2) == 0 {
		lat.StragglerProb, lat.StragglerFactor = 0.1*r.Float64(), 2+8*r.Float64()
	}
	p := TailParams{Latency: lat, Quantiles: []float64{0.25, 0.5, 0.9, 0.99}}
	if failing {
		p.FailRate = 0.1 + 0.4*r.Float64()
	}
	if kind == PolicyKOfN {
		n := 1 + r.IntN(6)
		p.Policy = TailPolicy{Kind: PolicyKOfN, N: n, K: 1 + r.IntN(n)}
		if failing {
			// Where failures decide: more than one must pass, and some may fail.
			n = 3 + r.IntN(4)
			p.Policy = TailPolicy{Kind: PolicyKOfN, N: n, K: 2 + r.IntN(n-2)}
		}
	} else {
		p.Policy = TailPolicy{Kind: PolicyHedge, AfterQuantile: 0.3 + 0.69*r.Float64()}
		if r.IntN(2) == 0 {
			h := Latency{MedianS: lat.MedianS * (0.5 + r.Float64())}
			h.P90S = h.MedianS * (1.1 + 2*r.Float64())
			p.Policy.Hedge = &h
		}
	}
	return p
}

// TestTailExactAgainstNaiveMonteCarlo: on random parameters the closed
// forms agree with the naive simulation, and the package's own Monte
// Carlo agrees with the closed forms.
func TestTailExactAgainstNaiveMonteCarlo(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(31, 32))
	for iter := range 12 {
		// Each kind with and without failing attempts, three times.
		p := randomTail(r, []string{PolicyKOfN, PolicyHedge}[iter%2], iter%4 >= 2)
		name := fmt.Sprintf("iter %d %+v %+v fail %g", iter, p.Latency, p.Policy, p.FailRate)
		exact := mustTail(t, p)
		checkAgainstNaive(t, name, p, exact, 50_000)

		p.Method, p.Trials, p.Seed = MethodMonteCarlo, 50_000, uint64(iter)
		mc := mustTail(t, p)
		m := newTailModel(p)
		m.pol = exact.Policy
		for i, pc := range mc.WithPolicy.Percentiles {
			if pc.S == nil {
				if exact.WithPolicy.Percentiles[i].S != nil && exact.WithPolicy.PResult > pc.Q+0.01 {
					t.Errorf("%s: Monte Carlo p%g never, exact %v", name, 100*pc.Q, *exact.WithPolicy.Percentiles[i].S)
				}
				continue
			}
			if se := math.Sqrt(pc.Q * (1 - pc.Q) / 5e4); math.Abs(m.result(*pc.S)-pc.Q) > 5*se+1e-4 {
				t.Errorf("%s: Monte Carlo p%g = %.6g s, where the exact CDF is %.6g", name, 100*pc.Q, *pc.S, m.result(*pc.S))
			}
			if pc.Low95 == nil || !(*pc.Low95 <= *pc.S && (pc.High95 == nil || *pc.S <= *pc.High95)) {
				t.Errorf("%s: p%g %.6g outside its interval [%.6g, %.6g]", name, 100*pc.Q, *pc.S, *pc.Low95, *pc.High95)
			}
		}
		if d := math.Abs(mc.WithPolicy.AttemptS - exact.WithPolicy.AttemptS); d > 5**mc.WithPolicy.AttemptStdErr {
			t.Errorf("%s: Monte Carlo attempt-seconds %.6g ± %.3g, exact %.6g", name, mc.WithPolicy.AttemptS, *mc.WithPolicy.AttemptStdErr, exact.WithPolicy.AttemptS)
		}
	}
}

// TestTailCorrelated checks the Monte Carlo of correlated attempts (no
// closed form) against numerical integration over the shared factor:
// given Z0 = z, attempts are independent lognormals with log-median
// mu + sigma·√ρ·z and log-sd sigma·√(1−ρ).
func TestTailCorrelated(t *testing.T) {
	t.Parallel()
	lat := Latency{MedianS: 10, P90S: 20}
	sigma := math.Log(2) / 1.2815515655446004
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	// cdfGiven is one attempt's CDF at t given the shared z.
	cdfGiven := func(t, z, rho float64) float64 {
		if t <= 0 {
			return 0
		}
		return phi((math.Log(t/10) - sigma*math.Sqrt(rho)*z) / (sigma * math.Sqrt(1-rho)))
	}
	// integrate averages g(z) over the standard normal by Simpson's rule.
	integrate := func(g func(z float64) float64) float64 {
		const n, lo, hi = 2000, -9.0, 9.0
		h := (hi - lo) / n
		s := 0.0
		for i := 0; i <= n; i++ {
			z := lo + float64(i)*h
			w := map[bool]float64{true: 4, false: 2}[i%2 == 1]
			if i == 0 || i == n {
				w = 1
			}
			s += w * g(z) * math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
		}
		return s * h / 3
	}
	for _, c := range []struct {
		pol TailPolicy
		rho float64
		// cdf of the time to a result given z
		given func(t, z, rho float64) float64
	}{
		{TailPolicy{Kind: PolicyKOfN, N: 3, K: 1}, 0.5, func(t, z, rho float64) float64 {
			return 1 - math.Pow(1-cdfGiven(t, z, rho), 3)
		}},
		{TailPolicy{Kind: PolicyKOfN, N: 4, K: 3}, 0.3, func(t, z, rho float64) float64 {
			f := cdfGiven(t, z, rho)
			return 4*f*f*f*(1-f) + f*f*f*f
		}},
		{TailPolicy{Kind: PolicyHedge, AfterS: 15}, 0.6, func(t, z, rho float64) float64 {
			return 1 - (1-cdfGiven(t, z, rho))*(1-cdfGiven(t-15, z, rho))
		}},
	} {
		p := TailParams{Latency: lat, Policy: c.pol, Rho: c.rho, Trials: 200_000, Seed: 7}
		r := mustTail(t, p)
		if r.Method != MethodMonteCarlo {
			t.Fatalf("rho %g: method %s", c.rho, r.Method)
		}
		for _, pc := range r.WithPolicy.Percentiles {
			g := integrate(func(z float64) float64 { return c.given(*pc.S, z, c.rho) })
			if se := math.Sqrt(pc.Q * (1 - pc.Q) / 2e5); math.Abs(g-pc.Q) > 5*se+1e-4 {
				t.Errorf("%+v rho %g: Monte Carlo p%g = %.6g s, where the integrated CDF is %.6g", c.pol, c.rho, 100*pc.Q, *pc.S, g)
			}
		}
		// Correlation makes speculation worth less: the race's p99 is
		// worse than with independent attempts.
		indep := mustTail(t, TailParams{Latency: lat, Policy: c.pol})
		if c.pol.K == 1 && !(*r.WithPolicy.Percentiles[3].S > *indep.WithPolicy.Percentiles[3].S) {
			t.Errorf("%+v: correlated p99 %.6g not above independent %.6g", c.pol, *r.WithPolicy.Percentiles[3].S, *indep.WithPolicy.Percentiles[3].S)
		}
	}
	// Fully correlated attempts without stragglers are one attempt.
	r := mustTail(t, TailParams{Latency: lat, Policy: TailPolicy{Kind: PolicyKOfN, N: 5, K: 1}, Rho: 1, Trials: 100_000})
	for i, pc := range r.WithPolicy.Percentiles {
		if !(*pc.Low95 <= *r.Single.Percentiles[i].S && *r.Single.Percentiles[i].S <= *pc.High95) && !rel(*pc.S, *r.Single.Percentiles[i].S, 0.01) {
			t.Errorf("rho 1: p%g %.6g, one attempt's %.6g", 100*pc.Q, *pc.S, *r.Single.Percentiles[i].S)
		}
	}
}

// TestTailProperties: with independent, always-passing attempts a hedge
// or a race is never slower than one attempt at any percentile, a
// barrier never faster; the Monte Carlo is deterministic for its seed.
func TestTailProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(41, 42))
	for iter := range 30 {
		p := randomTail(r, []string{PolicyKOfN, PolicyHedge}[iter%2], false)
		rep := mustTail(t, p)
		for i, pc := range rep.WithPolicy.Percentiles {
			one, got := *rep.Single.Percentiles[i].S, *pc.S
			switch {
			case p.Policy.Kind == PolicyHedge || p.Policy.K == 1:
				if got > one*(1+1e-9) {
					t.Fatalf("%+v %+v: p%g %.6g above one attempt's %.6g", p.Latency, rep.Policy, 100*pc.Q, got, one)
				}
			case p.Policy.K == p.Policy.N:
				if got < one*(1-1e-9) {
					t.Fatalf("%+v %+v: barrier p%g %.6g below one attempt's %.6g", p.Latency, rep.Policy, 100*pc.Q, got, one)
				}
			}
		}
	}
	p := TailParams{Latency: straggler, Policy: TailPolicy{Kind: PolicyKOfN, N: 4, K: 2}, Method: MethodMonteCarlo, Trials: 1000, Seed: 3}
	a, b := mustTail(t, p), mustTail(t, p)
	if *a.WithPolicy.Percentiles[3].S != *b.WithPolicy.Percentiles[3].S || a.WithPolicy.AttemptS != b.WithPolicy.AttemptS {
		t.Fatal("same seed, different Monte Carlo")
	}
}

func TestTailValidate(t *testing.T) {
	t.Parallel()
	ok := TailParams{Latency: Latency{MedianS: 10, P90S: 15}, Policy: TailPolicy{Kind: PolicyKOfN, N: 3, K: 2}}
	for _, c := range []struct {
		edit  func(p *TailParams)
		param string
	}{
		{func(p *TailParams) { p.Latency.MedianS = 0 }, "median-s"},
		{func(p *TailParams) { p.Latency.P90S = 10 }, "p90-s"},
		{func(p *TailParams) { p.Latency.P90S = math.NaN() }, "p90-s"},
		{func(p *TailParams) { p.Latency.StragglerProb = 1.5 }, "straggler-prob"},
		{func(p *TailParams) { p.Latency.StragglerProb = 0.1 }, "straggler-factor"},
		{func(p *TailParams) { p.FailRate = 1 }, "fail-rate"},
		{func(p *TailParams) { p.Rho = -0.1 }, "rho"},
		{func(p *TailParams) { p.Policy.N = 0 }, "n"},
		{func(p *TailParams) { p.Policy.N = 101; p.Policy.K = 1 }, "n"},
		{func(p *TailParams) { p.Policy.K = 4 }, "k"},
		{func(p *TailParams) { p.Policy = TailPolicy{Kind: PolicyHedge} }, "hedge-after-s"},
		{func(p *TailParams) { p.Policy = TailPolicy{Kind: PolicyHedge, AfterQuantile: 1} }, "hedge-at"},
		{func(p *TailParams) {
			p.Policy = TailPolicy{Kind: PolicyHedge, AfterS: 5, Hedge: &Latency{MedianS: 3, P90S: 2}}
		}, "hedge-p90-s"},
		{func(p *TailParams) { p.Policy.Kind = "mirror" }, "policy"},
		{func(p *TailParams) { p.Quantiles = []float64{0.5, 1} }, "percentiles"},
		{func(p *TailParams) { p.Rho, p.Method = 0.2, MethodExact }, "method"},
		{func(p *TailParams) { p.Method = "guess" }, "method"},
		{func(p *TailParams) { p.Method, p.Trials = MethodMonteCarlo, 10 }, "trials"},
	} {
		p := ok
		p.Policy.Hedge = nil
		c.edit(&p)
		_, err := Tail(p)
		var pe *ParamError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &pe) || pe.Param != c.param {
			t.Errorf("%+v: %v, want a ParamError for %s", p, err, c.param)
		}
	}
	if _, err := Tail(ok); err != nil {
		t.Fatal(err)
	}
}

// TestBinomialPMF checks the product form against the log-space one of
// the voting model.
func TestBinomialPMF(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 2, 7, 30, 100} {
		for _, p := range []float64{0, 1e-9, 0.01, 0.3, 0.5, 0.97, 1 - 1e-9, 1} {
			got, want := binomialPMF(n, p), failures(n, p, 0)
			for i := range got {
				if math.Abs(got[i]-want[i]) > 1e-12*max(1, want[i]) {
					t.Fatalf("n %d p %g: P(%d) = %.17g, want %.17g", n, p, i, got[i], want[i])
				}
			}
		}
	}
}
