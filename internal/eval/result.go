package eval

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apiary-dev/apiary/internal/plot"
)

// Verdicts.
const (
	VerdictSwarm  = "swarm dominates"
	VerdictSingle = "single agent preferred"
)

// Result is an evaluation: both arms and the verdict.
type Result struct {
	TaskSet   string    `json:"task_set"`
	Tasks     int       `json:"tasks"`
	BudgetUSD float64   `json:"budget_usd"`
	Single    ArmResult `json:"single"`
	Swarm     ArmResult `json:"swarm"`
	// TokenAmplification is the swarm's tokens over the single agent's;
	// null when the single agent's are unknown (zero).
	TokenAmplification *float64 `json:"token_amplification"`
	// CostKnown is false when neither arm reported any cost (agents that
	// do not account for their usage): cost per accepted task then ties.
	CostKnown bool     `json:"cost_known"`
	Verdict   string   `json:"verdict"`
	Reasons   []string `json:"reasons"`
}

// ArmResult is one arm's run, judged.
type ArmResult struct {
	Arm    Arm    `json:"arm"`
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Repo   string `json:"repo"`
	// Quality is Accepted/Attempted: a task is accepted when apiary's
	// gates accepted its work (the single agent's one task, or the swarm
	// task) and its hidden checks pass on the run's final tree.
	Attempted int     `json:"attempted"`
	Accepted  int     `json:"accepted"`
	Quality   float64 `json:"quality"`
	// CriticalPathS is the run's achieved critical path: from the start of
	// its first task to the end of the last, along dependencies.
	CriticalPathS float64 `json:"critical_path_s"`
	WallS         float64 `json:"wall_s"`
	USD           float64 `json:"usd"`
	InputTokens   int64   `json:"input_tokens"`
	OutputTokens  int64   `json:"output_tokens"`
	Tokens        int64   `json:"tokens"`
	// CostPerAccepted is USD/Accepted; null when nothing was accepted.
	CostPerAccepted *float64      `json:"cost_per_accepted_usd"`
	Tasks           []TaskOutcome `json:"tasks"`
}

// TaskOutcome is how one task of the set fared in an arm.
type TaskOutcome struct {
	ID string `json:"id"`
	// GateStatus is the receipt status of the plan task that did it
	// (succeeded, failed, skipped, cancelled); GateReason the gate that
	// rejected it.
	GateStatus   string         `json:"gate_status"`
	GateReason   string         `json:"gate_reason,omitempty"`
	Hidden       []CheckOutcome `json:"hidden_checks"`
	HiddenPassed bool           `json:"hidden_passed"`
	Accepted     bool           `json:"accepted"`
}

// CheckOutcome is one hidden check's result.
type CheckOutcome struct {
	Command string `json:"command"`
	CheckResult
}

// finish computes the comparison.
func (r *Result) finish() {
	if r.Single.Tokens > 0 {
		a := float64(r.Swarm.Tokens) / float64(r.Single.Tokens)
		r.TokenAmplification = &a
	}
	r.CostKnown = r.Single.USD > 0 || r.Swarm.USD > 0
	r.Verdict, r.Reasons = Compare(r.Single, r.Swarm)
}

// Compare decides whether the swarm dominates the single agent: no worse
// on quality (higher is better), critical-path time and cost per accepted
// task (lower is better; none accepted counts as infinite cost), and
// strictly better on at least one. Reasons say how each axis compared.
func Compare(single, sw ArmResult) (string, []string) {
	cost := func(a ArmResult) float64 {
		if a.CostPerAccepted == nil {
			return math.Inf(1)
		}
		return *a.CostPerAccepted
	}
	axes := []struct {
		name          string
		single, swarm float64
		higherBetter  bool
		format        func(float64) string
	}{
		{"quality", single.Quality, sw.Quality, true, func(v float64) string { return fmt.Sprintf("%.2f", v) }},
		{"critical path", single.CriticalPathS, sw.CriticalPathS, false, func(v float64) string { return fmt.Sprintf("%.1fs", v) }},
		{"cost per accepted task", cost(single), cost(sw), false, usd},
	}
	worse, better := 0, 0
	var reasons []string
	for _, a := range axes {
		var rel string
		switch {
		case a.swarm == a.single:
			rel = "ties"
		case (a.swarm > a.single) == a.higherBetter:
			rel = "better"
			better++
		default:
			rel = "worse"
			worse++
		}
		reasons = append(reasons, fmt.Sprintf("%s: swarm %s %s vs single %s", a.name, rel, a.format(a.swarm), a.format(a.single)))
	}
	if worse == 0 && better > 0 {
		return VerdictSwarm, reasons
	}
	return VerdictSingle, reasons
}

func usd(v float64) string {
	if math.IsInf(v, 1) {
		return "n/a (none accepted)"
	}
	return fmt.Sprintf("$%.4f", v)
}

// WriteText renders the evaluation for people.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "task set %s: %d tasks, budget $%.2f per arm\n\n", r.TaskSet, r.Tasks, r.BudgetUSD)
	row := func(name string, f func(a *ArmResult) string) {
		fmt.Fprintf(&b, "%-24s %18s %18s\n", name, f(&r.Single), f(&r.Swarm))
	}
	row("", func(a *ArmResult) string { return string(a.Arm) })
	row("quality Q (accepted)", func(a *ArmResult) string { return fmt.Sprintf("%.2f (%d/%d)", a.Quality, a.Accepted, a.Attempted) })
	row("critical path", func(a *ArmResult) string { return fmt.Sprintf("%.1fs", a.CriticalPathS) })
	row("wall time", func(a *ArmResult) string { return fmt.Sprintf("%.1fs", a.WallS) })
	row("cost", func(a *ArmResult) string { return fmt.Sprintf("$%.4f", a.USD) })
	row("cost per accepted task", func(a *ArmResult) string {
		if a.CostPerAccepted == nil {
			return "n/a"
		}
		return fmt.Sprintf("$%.4f", *a.CostPerAccepted)
	})
	row("tokens (in+out)", func(a *ArmResult) string { return fmt.Sprint(a.Tokens) })
	amp := "n/a (single agent reported no tokens)"
	if r.TokenAmplification != nil {
		amp = fmt.Sprintf("%.2fx", *r.TokenAmplification)
	}
	fmt.Fprintf(&b, "%-24s %37s\n", "token amplification", amp)
	fmt.Fprintf(&b, "\n%-14s %-30s %s\n", "task", "single", "swarm")
	for i := range r.Single.Tasks {
		s, w := r.Single.Tasks[i], r.Swarm.Tasks[i]
		fmt.Fprintf(&b, "%-14s %-30s %s\n", s.ID, outcome(s), outcome(w))
	}
	fmt.Fprintf(&b, "\nverdict: %s\n", r.Verdict)
	for _, reason := range r.Reasons {
		fmt.Fprintf(&b, "  %s\n", reason)
	}
	if !r.CostKnown {
		b.WriteString("note: no agent reported its cost, so cost per accepted task ties\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// outcome says how a task fared: accepted, or why not.
func outcome(t TaskOutcome) string {
	if t.Accepted {
		return "accepted"
	}
	var why []string
	if t.GateStatus != "succeeded" {
		g := "gates: " + t.GateStatus
		if t.GateReason != "" {
			g += " (" + strings.Fields(t.GateReason)[0] + ")"
		}
		why = append(why, g)
	}
	if !t.HiddenPassed {
		why = append(why, "hidden checks failed")
	}
	return "rejected, " + strings.Join(why, ", ")
}

// Chart compares the arms on the three axes, each relative to the larger
// of the two (1 = the larger): quality, critical path and cost per
// accepted task.
func (r *Result) Chart() plot.Chart {
	rel := func(a, b float64) (float64, float64) {
		m := max(a, b)
		if m == 0 || math.IsInf(m, 0) {
			return clampInf(a, m), clampInf(b, m)
		}
		return a / m, b / m
	}
	cost := func(a ArmResult) float64 {
		if a.CostPerAccepted == nil {
			return math.Inf(1)
		}
		return *a.CostPerAccepted
	}
	q1, q2 := rel(r.Single.Quality, r.Swarm.Quality)
	t1, t2 := rel(r.Single.CriticalPathS, r.Swarm.CriticalPathS)
	c1, c2 := rel(cost(r.Single), cost(r.Swarm))
	return plot.Chart{Kind: plot.Bar, Title: fmt.Sprintf("%s: single agent vs swarm, $%.2f each", r.TaskSet, r.BudgetUSD),
		Y:          plot.Axis{Label: "value / the larger of the two", Min: 0, Max: 1},
		Categories: []string{"quality Q: more=good", "crit. path: less=good", "$/accepted: less=good"},
		Series:     []plot.Series{{Name: "single agent", Y: []float64{q1, t1, c1}}, {Name: "swarm", Y: []float64{q2, t2, c2}}}}
}

// clampInf maps v relative to a maximum that is 0 or infinite: infinite
// values become 1 and finite ones 0.
func clampInf(v, _ float64) float64 {
	if math.IsInf(v, 1) {
		return 1
	}
	return 0
}
