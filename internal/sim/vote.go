package sim

import "math"

// VoteReport is the answer of `apiary sim vote`: how often M voters (agents
// reviewing or answering the same thing), each wrong with probability P,
// are wrong as a majority (more than M/2 of them; a tie is not a majority)
// and unanimously, when their errors are independent and when they are
// pairwise correlated with coefficient Rho.
type VoteReport struct {
	M                  int     `json:"m"`
	P                  float64 `json:"p"`
	Rho                float64 `json:"rho"`
	MajorityFailIndep  float64 `json:"majority_fail_indep"`
	MajorityFailCorr   float64 `json:"majority_fail_corr"`
	UnanimousFailIndep float64 `json:"unanimous_fail_indep"`
	UnanimousFailCorr  float64 `json:"unanimous_fail_corr"`
}

// maxVoters bounds M; the distributions are computed in O(M).
const maxVoters = 1_000_000

// Vote computes the report. The correlated model is the beta-binomial: each
// voter fails with a common probability drawn from Beta(α, β) with mean p
// and α+β = (1−ρ)/ρ, which gives every pair of voters correlation ρ. ρ = 0
// is the binomial; ρ = 1 makes the voters identical (all fail with
// probability p).
func Vote(m int, p, rho float64) (VoteReport, error) {
	if m < 1 || m > maxVoters {
		return VoteReport{}, paramErr("m", m, "in [1, 1000000]")
	}
	if err := checkProb("p", p); err != nil {
		return VoteReport{}, err
	}
	if err := checkProb("rho", rho); err != nil {
		return VoteReport{}, err
	}
	r := VoteReport{M: m, P: p, Rho: rho}
	indep := failures(m, p, 0)
	corr := failures(m, p, rho)
	r.MajorityFailIndep, r.UnanimousFailIndep = majority(indep), indep[m]
	r.MajorityFailCorr, r.UnanimousFailCorr = majority(corr), corr[m]
	return r, nil
}

// majority sums the probability that more than half of the voters fail.
func majority(pmf []float64) float64 {
	m := len(pmf) - 1
	s := 0.0
	for k := m/2 + 1; k <= m; k++ {
		s += pmf[k]
	}
	return min(s, 1)
}

// failures returns P(X = k), k = 0..m, for the number X of failing voters
// under the beta-binomial with mean p and pairwise correlation rho (the
// binomial when rho is 0).
func failures(m int, p, rho float64) []float64 {
	pmf := make([]float64, m+1)
	switch {
	case p == 0:
		pmf[0] = 1
		return pmf
	case p == 1:
		pmf[m] = 1
		return pmf
	case rho == 1:
		pmf[0], pmf[m] = 1-p, p
		return pmf
	}
	// log P(0), then the ratio P(k+1)/P(k), all in log space.
	var logP0 float64
	var ratio func(k int) float64
	if rho == 0 {
		logP0 = float64(m) * math.Log1p(-p)
		lodds := math.Log(p) - math.Log1p(-p)
		ratio = func(k int) float64 { return math.Log(float64(m-k)/float64(k+1)) + lodds }
	} else {
		s := (1 - rho) / rho
		alpha, beta := p*s, (1-p)*s
		for j := range m {
			logP0 += math.Log1p(-alpha / (s + float64(j)))
		}
		ratio = func(k int) float64 {
			return math.Log(float64(m-k)/float64(k+1)) + math.Log((alpha+float64(k))/(beta+float64(m-k-1)))
		}
	}
	lp := logP0
	for k := 0; k <= m; k++ {
		pmf[k] = math.Exp(lp)
		if k < m {
			lp += ratio(k)
		}
	}
	return pmf
}
