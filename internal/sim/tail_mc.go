package sim

import (
	"math"
	"math/rand/v2"
	"slices"
)

// streamTail separates the Monte Carlo's random stream from the others
// drawn from one seed.
const streamTail = 0x7461696c

// attempt is one drawn attempt: when it ends (from the task's start) and
// whether it passes.
type attempt struct {
	end  float64
	pass bool
}

// trial draws one task under the policy and returns the time to its
// result (+Inf when it fails), the attempt-seconds spent and the first
// attempt's own duration and outcome (what one attempt alone would have
// given, for common random numbers). buf is scratch of at least N.
func (m tailModel) trial(rng *rand.Rand, buf []attempt) (t, cost, first float64, firstPass bool) {
	z0 := 0.0
	if m.rho > 0 {
		z0 = rng.NormFloat64()
	}
	draw := func(d dist) attempt {
		z := rng.NormFloat64()
		if m.rho > 0 {
			z = math.Sqrt(m.rho)*z0 + math.Sqrt(1-m.rho)*z
		}
		x := d.sample(rng, z)
		return attempt{end: x, pass: m.pass == 1 || rng.Float64() < m.pass}
	}
	inf := math.Inf(1)
	if m.pol.Kind == PolicyHedge {
		a := draw(m.a)
		first, firstPass = a.end, a.pass
		d := m.pol.AfterS
		if a.end <= d {
			t = inf
			if a.pass {
				t = a.end
			}
			return t, a.end, first, firstPass
		}
		b := draw(m.b)
		b.end += d
		early, late := a, b
		if b.end < a.end {
			early, late = b, a
		}
		if early.pass {
			// The other is cancelled when the early one passes.
			return early.end, early.end + early.end - d, first, firstPass
		}
		t = inf
		if late.pass {
			t = late.end
		}
		return t, a.end + b.end - d, first, firstPass
	}
	n, k := m.pol.N, m.pol.K
	as := buf[:n]
	for i := range as {
		as[i] = draw(m.a)
	}
	first, firstPass = as[0].end, as[0].pass
	slices.SortFunc(as, func(x, y attempt) int {
		switch {
		case x.end < y.end:
			return -1
		case x.end > y.end:
			return 1
		}
		return 0
	})
	passed, failed := 0, 0
	decided, t := as[n-1].end, inf
	for _, x := range as {
		if x.pass {
			passed++
		} else {
			failed++
		}
		if passed == k {
			decided, t = x.end, x.end
			break
		}
		if failed > n-k {
			decided = x.end
			break
		}
	}
	for _, x := range as {
		cost += min(x.end, decided)
	}
	return t, cost, first, firstPass
}

// monteCarlo estimates the outcome from trials draws with a fixed seed.
func (m tailModel) monteCarlo(qs []float64, trials int, seed uint64) TailOutcome {
	rng := rand.New(rand.NewPCG(seed, streamTail))
	buf := make([]attempt, max(m.pol.N, 2))
	ts := make([]float64, trials)
	var costSum, costSq float64
	for i := range ts {
		t, c, _, _ := m.trial(rng, buf)
		ts[i] = t
		costSum += c
		costSq += c * c
	}
	return summarize(ts, qs, costSum, costSq)
}

// summarize turns draws of the time to a result (+Inf: none) and the sums
// of the attempt-seconds and of their squares into an outcome.
func summarize(ts, qs []float64, costSum, costSq float64) TailOutcome {
	n := float64(len(ts))
	s := sortedCopy(ts)
	ok := len(s) - countInf(s)
	o := TailOutcome{PResult: float64(ok) / n}
	o.AttemptS = costSum / n
	ce := math.Sqrt(max(0, costSq/n-o.AttemptS*o.AttemptS) / n)
	o.AttemptStdErr = &ce
	if ok > 0 {
		sum, sq := 0.0, 0.0
		for _, t := range s[:ok] {
			sum += t
			sq += t * t
		}
		o.MeanS = sum / float64(ok)
		me := math.Sqrt(max(0, sq/float64(ok)-o.MeanS*o.MeanS) / float64(ok))
		o.MeanStdErr = &me
	}
	for _, q := range qs {
		o.Percentiles = append(o.Percentiles, orderPercentile(s, ok, q))
	}
	return o
}

// orderPercentile is the q-quantile of the sorted draws s (the first ok
// finite) with a 95% confidence interval from the binomial distribution of
// the number of draws below the true quantile: ranks n·q ± 1.96·√(n·q(1−q)).
func orderPercentile(s []float64, ok int, q float64) Percentile {
	n := float64(len(s))
	pc := Percentile{Q: q}
	at := func(r float64) *float64 {
		i := min(max(int(math.Ceil(r))-1, 0), len(s)-1)
		if i >= ok {
			return nil
		}
		v := s[i]
		return &v
	}
	half := 1.96 * math.Sqrt(n*q*(1-q))
	pc.S, pc.Low95, pc.High95 = at(n*q), at(n*q-half), at(n*q+half+1)
	if pc.S == nil {
		pc.Low95, pc.High95 = nil, nil
	}
	return pc
}

func countInf(s []float64) int {
	c := 0
	for _, v := range s {
		if math.IsInf(v, 1) {
			c++
		}
	}
	return c
}
