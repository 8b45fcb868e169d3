package sim

import (
	"math"
	"math/rand/v2"

	"github.com/apiary-dev/apiary/internal/plan"
)

// PlanTailParams are the inputs of PlanTail: how much a plan's estimates
// spread. Each task's attempts take a Latency with median its estimate_s,
// 90th percentile P90Ratio times that, and the stragglers given.
type PlanTailParams struct {
	Workers         int // < 1: the plan's max_parallel
	P90Ratio        float64
	StragglerProb   float64
	StragglerFactor float64
	// Quantiles as in TailParams; nil: DefaultQuantiles.
	Quantiles []float64
	// Trials and Seed of the makespan's Monte Carlo; 0 trials: 1,000.
	Trials int
	Seed   uint64
	// Progress, if set, is called with the trials done so far, now and
	// then and at the end, from the calling goroutine.
	Progress func(done, total int)
}

// PlanTail is what spread in the estimates does to a plan: the time to
// each speculative task's result under its policy (a quorum, or a hedge
// after hedge_after_s or, for a task that only names a hedge_agent, at
// its p90, where the runtime hedges once it has observed enough
// attempts), and the makespan's percentiles with every task run once and
// with the plan's policies.
type PlanTail struct {
	Workers         int     `json:"workers"`
	P90Ratio        float64 `json:"p90_ratio"`
	StragglerProb   float64 `json:"straggler_prob,omitempty"`
	StragglerFactor float64 `json:"straggler_factor,omitempty"`
	Trials          int     `json:"trials"`
	Seed            uint64  `json:"seed"`
	// Tasks are the tasks with a policy, in file order, computed exactly.
	Tasks []TaskTail `json:"tasks"`
	// Makespan: a Monte Carlo of the list schedule of plan analyze (its
	// priorities stay those of the estimates) with every task's duration
	// drawn. Single runs each task once; WithPolicies applies the plan's
	// policies, whose extra attempts take no worker slot. Both use the
	// same draws for every task's first attempt.
	Makespan MakespanTail `json:"makespan"`
}

// TaskTail is one speculative task of a plan.
type TaskTail struct {
	ID         string      `json:"id"`
	Latency    Latency     `json:"latency"`
	Policy     TailPolicy  `json:"policy"`
	Single     TailOutcome `json:"single"`
	WithPolicy TailOutcome `json:"with_policy"`
}

// MakespanTail is the makespan's distribution without and with policies.
type MakespanTail struct {
	Single       []Percentile `json:"single"`
	WithPolicies []Percentile `json:"with_policies"`
	MeanSingleS  float64      `json:"mean_single_s"`
	MeanPolicyS  float64      `json:"mean_with_policies_s"`
}

// AnalyzePlanTail computes the plan's tail under p.
func AnalyzePlanTail(pl *plan.Plan, p PlanTailParams) (*PlanTail, error) {
	if !(p.P90Ratio > 1 && p.P90Ratio <= 1000) {
		return nil, paramErr("p90-ratio", p.P90Ratio, "in (1, 1000]")
	}
	if p.Trials == 0 {
		p.Trials = 1000
	}
	if p.Trials < 100 || p.Trials > 1_000_000 {
		return nil, paramErr("trials", p.Trials, "in [100, 1000000]")
	}
	if p.Quantiles == nil {
		p.Quantiles = DefaultQuantiles
	}
	if err := (Latency{MedianS: 1, P90S: p.P90Ratio, StragglerProb: p.StragglerProb, StragglerFactor: p.StragglerFactor}).validate(""); err != nil {
		return nil, err // also for a plan whose estimates are all zero
	}
	if p.StragglerProb == 0 {
		p.StragglerFactor = 0 // no stragglers: the factor means nothing
	}
	replay := pl.Replay(p.Workers)
	if p.Workers < 1 {
		p.Workers = pl.MaxParallel
	}
	out := &PlanTail{Workers: p.Workers, P90Ratio: p.P90Ratio, StragglerProb: p.StragglerProb,
		StragglerFactor: p.StragglerFactor, Trials: p.Trials, Seed: p.Seed, Tasks: []TaskTail{}}
	n := len(pl.Tasks)
	// Each task's model: nil for a task of zero estimate, which takes no
	// time whatever the spread.
	models := make([]*tailModel, n)
	maxN := 2
	for i, t := range pl.Tasks {
		if t.EstimateS == 0 {
			continue
		}
		lat := Latency{MedianS: t.EstimateS, P90S: t.EstimateS * p.P90Ratio, StragglerProb: p.StragglerProb, StragglerFactor: p.StragglerFactor}
		tp := TailParams{Latency: lat, Policy: TailPolicy{Kind: PolicyKOfN, N: 1, K: 1}, Quantiles: p.Quantiles}
		speculative := true
		switch {
		case t.Quorum != nil && t.Quorum.N > 1:
			tp.Policy = TailPolicy{Kind: PolicyKOfN, N: t.Quorum.N, K: t.Quorum.K}
		case t.HedgeAfterS > 0:
			tp.Policy = TailPolicy{Kind: PolicyHedge, AfterS: t.HedgeAfterS}
		case t.HedgeAgent != "":
			tp.Policy = TailPolicy{Kind: PolicyHedge, AfterQuantile: 0.9}
		default:
			speculative = false
		}
		if err := tp.validate(); err != nil {
			return nil, err
		}
		m := newTailModel(tp)
		models[i] = &m
		maxN = max(maxN, tp.Policy.N)
		if speculative {
			one := tailModel{a: m.a, pass: 1, pol: TailPolicy{Kind: PolicyKOfN, N: 1, K: 1}}
			out.Tasks = append(out.Tasks, TaskTail{ID: t.ID, Latency: lat, Policy: tp.Policy,
				Single: one.exact(p.Quantiles), WithPolicy: m.exact(p.Quantiles)})
		}
	}

	rng := rand.New(rand.NewPCG(p.Seed, streamTail))
	buf := make([]attempt, maxN)
	single, policy := make([]float64, n), make([]float64, n)
	ms, mp := make([]float64, p.Trials), make([]float64, p.Trials)
	every := max(1, p.Trials/20)
	for k := range p.Trials {
		for i, m := range models {
			if m == nil {
				single[i], policy[i] = 0, 0
				continue
			}
			t, _, first, _ := m.trial(rng, buf)
			single[i], policy[i] = first, t
		}
		ms[k], mp[k] = replay.Makespan(single), replay.Makespan(policy)
		if p.Progress != nil && ((k+1)%every == 0 || k+1 == p.Trials) {
			p.Progress(k+1, p.Trials)
		}
	}
	out.Makespan = MakespanTail{MeanSingleS: mean(ms), MeanPolicyS: mean(mp)}
	ss, sp := sortedCopy(ms), sortedCopy(mp)
	for _, q := range p.Quantiles {
		out.Makespan.Single = append(out.Makespan.Single, orderPercentile(ss, len(ss), q))
		out.Makespan.WithPolicies = append(out.Makespan.WithPolicies, orderPercentile(sp, len(sp), q))
	}
	return out, nil
}

func mean(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s / math.Max(1, float64(len(vs)))
}
