package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/plan"
)

// workedSpeculative is the book's seven-task DAG (work 275 s, critical
// path v1→v2→v5→v7 = 174.5 s) with v5 hedged after 60 s and v7 run as 2
// of 3 attempts.
const workedSpeculative = `version: 1
max_parallel: 4
tasks:
  - {id: v1, objective: one, agent: claude, write_scope: [a/], estimate_s: 20.5}
  - {id: v2, objective: two, agent: claude, write_scope: [b/], estimate_s: 42, deps: [v1]}
  - {id: v3, objective: three, agent: claude, write_scope: [c/], estimate_s: 42, deps: [v1]}
  - {id: v4, objective: four, agent: claude, write_scope: [d/], estimate_s: 42, deps: [v1]}
  - {id: v5, objective: five, agent: claude, write_scope: [e/], estimate_s: 43, deps: [v2, v3], hedge_after_s: 60}
  - {id: v6, objective: six, agent: claude, write_scope: [f/], estimate_s: 16.5, deps: [v4]}
  - {id: v7, objective: seven, agent: claude, write_scope: [g/], estimate_s: 69, deps: [v5, v6], quorum: {n: 3, k: 2}}
`

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustPlan(t *testing.T, src string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse("plan.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlanTailWorkedExample(t *testing.T) {
	t.Parallel()
	pl := mustPlan(t, workedSpeculative)
	tp := PlanTailParams{P90Ratio: 1.5, StragglerProb: 0.02, StragglerFactor: 5, Trials: 2000, Seed: 1}
	r, err := AnalyzePlanTail(pl, tp)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tasks) != 2 || r.Tasks[0].ID != "v5" || r.Tasks[1].ID != "v7" || r.Workers != 4 {
		t.Fatalf("speculative tasks %+v on %d workers", r.Tasks, r.Workers)
	}
	// Each task's tail is exactly what sim hedge computes for it.
	for _, c := range []struct {
		i   int
		lat Latency
		pol TailPolicy
	}{
		{0, Latency{43, 64.5, 0.02, 5}, TailPolicy{Kind: PolicyHedge, AfterS: 60}},
		{1, Latency{69, 103.5, 0.02, 5}, TailPolicy{Kind: PolicyKOfN, N: 3, K: 2}},
	} {
		want := mustTail(t, TailParams{Latency: c.lat, Policy: c.pol})
		got := r.Tasks[c.i]
		if got.Latency != c.lat || asJSON(t, got.WithPolicy) != asJSON(t, want.WithPolicy) || asJSON(t, got.Single) != asJSON(t, want.Single) {
			t.Errorf("%s: %s, want %s", got.ID, asJSON(t, got), asJSON(t, want))
		}
	}
	// Spread lengthens the plan, the policies win some of it back.
	ms := r.Makespan
	if !(*ms.Single[0].S > 174.5) || !(ms.MeanPolicyS < ms.MeanSingleS) || !(*ms.WithPolicies[3].S < *ms.Single[3].S) {
		t.Errorf("makespan %+v", ms)
	}
	again, _ := AnalyzePlanTail(pl, tp)
	if asJSON(t, again.Makespan) != asJSON(t, r.Makespan) {
		t.Error("same seed, different makespans")
	}
	// As the spread vanishes the makespan is the book's 174.5 s, with and
	// without the policies.
	tight, err := AnalyzePlanTail(pl, PlanTailParams{P90Ratio: 1.000001, Trials: 200})
	if err != nil {
		t.Fatal(err)
	}
	for i := range tight.Makespan.Single {
		if !rel(*tight.Makespan.Single[i].S, 174.5, 1e-4) || !rel(*tight.Makespan.WithPolicies[i].S, 174.5, 1e-4) {
			t.Errorf("no spread: makespan %v / %v, want 174.5 s", *tight.Makespan.Single[i].S, *tight.Makespan.WithPolicies[i].S)
		}
	}
}

// TestPlanTailShapes checks the makespan's Monte Carlo against closed
// forms: a chain on one worker takes the sum (its mean is the sum of the
// means), independent tasks on a worker each take the maximum
// (P(makespan <= t) is the product of the tasks' CDFs).
func TestPlanTailShapes(t *testing.T) {
	t.Parallel()
	var chain, wide strings.Builder
	chain.WriteString("version: 1\ntasks:\n")
	wide.WriteString("version: 1\nmax_parallel: 6\ntasks:\n")
	est := []float64{10, 20, 30, 15, 25, 40}
	for i, e := range est {
		dep := ""
		if i > 0 {
			dep = fmt.Sprintf(", deps: [t%d]", i-1)
		}
		extra := ""
		if i == 2 {
			extra = ", hedge_after_s: 40"
		}
		fmt.Fprintf(&chain, "  - {id: t%d, objective: x, agent: claude, write_scope: [t%d/], estimate_s: %g%s%s}\n", i, i, e, dep, extra)
		fmt.Fprintf(&wide, "  - {id: t%d, objective: x, agent: claude, write_scope: [t%d/], estimate_s: %g}\n", i, i, e)
	}
	const trials = 20_000
	r, err := AnalyzePlanTail(mustPlan(t, chain.String()), PlanTailParams{Workers: 1, P90Ratio: 2, Trials: trials, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	sigma := math.Log(2) / 1.2815515655446004
	sum, sumPolicy, variance := 0.0, 0.0, 0.0
	for i, e := range est {
		m := e * math.Exp(sigma*sigma/2)
		sum += m
		variance += m * m * (math.Exp(sigma*sigma) - 1)
		if i == 2 {
			sumPolicy += r.Tasks[0].WithPolicy.MeanS
		} else {
			sumPolicy += m
		}
	}
	se := math.Sqrt(variance / trials)
	if math.Abs(r.Makespan.MeanSingleS-sum) > 5*se || math.Abs(r.Makespan.MeanPolicyS-sumPolicy) > 5*se {
		t.Errorf("chain: mean makespan %.6g / %.6g, want %.6g / %.6g ± %.3g", r.Makespan.MeanSingleS, r.Makespan.MeanPolicyS, sum, sumPolicy, se)
	}

	r, err = AnalyzePlanTail(mustPlan(t, wide.String()), PlanTailParams{P90Ratio: 2, Trials: trials, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, pc := range r.Makespan.Single {
		prod := 1.0
		for _, e := range est {
			prod *= Latency{MedianS: e, P90S: 2 * e}.dist().cdf(*pc.S)
		}
		if tol := 5 * math.Sqrt(pc.Q*(1-pc.Q)/trials); math.Abs(prod-pc.Q) > tol+1e-4 {
			t.Errorf("independent tasks: p%g makespan %.6g s, where the product of CDFs is %.6g", 100*pc.Q, *pc.S, prod)
		}
	}
}

func TestPlanTailValidate(t *testing.T) {
	t.Parallel()
	pl := mustPlan(t, workedSpeculative)
	for _, c := range []struct {
		p     PlanTailParams
		param string
	}{
		{PlanTailParams{P90Ratio: 1}, "p90-ratio"},
		{PlanTailParams{P90Ratio: 2, Trials: 10}, "trials"},
		{PlanTailParams{P90Ratio: 2, StragglerProb: 0.1}, "straggler-factor"},
		{PlanTailParams{P90Ratio: 2, StragglerProb: 2, StragglerFactor: 3}, "straggler-prob"},
	} {
		_, err := AnalyzePlanTail(pl, c.p)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != c.param {
			t.Errorf("%+v: %v, want a ParamError for %s", c.p, err, c.param)
		}
	}
}
