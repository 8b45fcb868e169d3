package eval

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apiary-dev/apiary/internal/plot"
)

// WriteText renders the evaluation for people: the inputs that decide the
// verdict, both arms on every axis, each task, the verdict and why.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	in := r.Inputs
	fmt.Fprintf(&b, "task set %s: %d tasks (sha256 %s)\n", r.TaskSet, r.Tasks, short(in.Digest))
	fmt.Fprintf(&b, "budget per arm: %s", budgetText(in.Budget))
	if in.Metered {
		b.WriteString(", one hard budget per arm held by the metering gateway\n")
	} else {
		b.WriteString(", NOT metered: no gateway, so no hard budget and no known cost\n")
	}
	agent := in.Agents
	if in.AgentKind != "" && in.AgentKind != in.Agents {
		agent += " (" + in.AgentKind + ")"
	}
	if in.Model != "" {
		agent += ", model " + in.Model
	}
	if in.ScriptedTurnS != nil {
		agent += fmt.Sprintf(", scripted model turn %.2fs", *in.ScriptedTurnS)
	}
	if in.Seed != nil {
		agent += fmt.Sprintf(", seed %d", *in.Seed)
	}
	fmt.Fprintf(&b, "agents: %s\n", agent)
	fmt.Fprintf(&b, "max parallel: single %d, swarm %d\n", in.MaxParallel[Single], in.MaxParallel[Swarm])
	vis, hid := 0, 0
	for _, c := range in.Grading {
		if c.Kind == Hidden {
			hid++
		} else {
			vis++
		}
	}
	fmt.Fprintf(&b, "grading: the same %d checks for both arms (%d visible, %d hidden), each graded on its own\n\n", len(in.Grading), vis, hid)

	row := func(name string, f func(a *ArmResult) string) {
		fmt.Fprintf(&b, "%-30s %20s %20s\n", name, f(&r.Single), f(&r.Swarm))
	}
	row("", func(a *ArmResult) string { return string(a.Arm) })
	row("quality Q (checks passed)", func(a *ArmResult) string {
		return fmt.Sprintf("%.2f (%d/%d)", a.Quality, a.ChecksPassed, a.ChecksTotal)
	})
	row("tasks accepted", func(a *ArmResult) string { return fmt.Sprintf("%d/%d", a.Accepted, a.Attempted) })
	row("time to last integration", func(a *ArmResult) string {
		if a.TimeTo != "last integration" {
			return fmt.Sprintf("%.1fs (none)", a.TimeS)
		}
		return fmt.Sprintf("%.1fs", a.TimeS)
	})
	row("achieved critical path", func(a *ArmResult) string { return fmt.Sprintf("%.1fs", a.CriticalPathS) })
	row("cost", func(a *ArmResult) string {
		if !a.CostKnown {
			return "n/a"
		}
		return fmt.Sprintf("$%.4f", a.USD)
	})
	row("cost per accepted task", func(a *ArmResult) string {
		if a.CostPerAccepted == nil {
			return "n/a"
		}
		return fmt.Sprintf("$%.4f", *a.CostPerAccepted)
	})
	row("tokens (in+out)", func(a *ArmResult) string {
		if !a.TokensKnown {
			return "n/a"
		}
		return fmt.Sprint(a.Tokens)
	})
	row("model requests (refused)", func(a *ArmResult) string {
		if a.Spend == nil {
			return "n/a"
		}
		return fmt.Sprintf("%d (%d)", a.Spend.Requests, a.Spend.Refused)
	})
	row("coordination messages/task", func(a *ArmResult) string {
		return fmt.Sprintf("%.2f (%d)", a.MessagesPerTask, a.Messages)
	})
	amp := "n/a (tokens not known)"
	if r.TokenAmplification != nil {
		amp = fmt.Sprintf("%.2fx", *r.TokenAmplification)
	}
	fmt.Fprintf(&b, "%-30s %41s\n", "token amplification", amp)
	for _, a := range []*ArmResult{&r.Single, &r.Swarm} {
		if a.Spend != nil && len(a.Spend.Models) > 0 {
			fmt.Fprintf(&b, "models (%s): %s\n", a.Arm, strings.Join(a.Spend.Models, ", "))
		}
	}

	fmt.Fprintf(&b, "\n%-14s %-32s %s\n", "task", "single", "swarm")
	for i := range r.Single.Tasks {
		s, w := r.Single.Tasks[i], r.Swarm.Tasks[i]
		fmt.Fprintf(&b, "%-14s %-32s %s\n", s.ID, outcome(s), outcome(w))
	}
	for _, a := range []*ArmResult{&r.Single, &r.Swarm} {
		if len(a.FromCandidates) > 0 {
			fmt.Fprintf(&b, "(%s: graded with the work of %s, which was not integrated)\n", a.Arm, strings.Join(a.FromCandidates, ", "))
		}
	}
	fmt.Fprintf(&b, "\nverdict: %s\n", r.Verdict)
	for _, reason := range r.Reasons {
		fmt.Fprintf(&b, "  %s\n", reason)
	}
	fmt.Fprintf(&b, "  not judged: token amplification %s; coordination messages per task, swarm %.2f vs single %.2f\n",
		amp, r.Swarm.MessagesPerTask, r.Single.MessagesPerTask)
	_, err := io.WriteString(w, b.String())
	return err
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}

func budgetText(b Budget) string {
	s := fmt.Sprintf("$%.2f", b.USD)
	if b.Tokens > 0 {
		s += fmt.Sprintf(" and %d tokens", b.Tokens)
	}
	return s
}

// outcome says how a task fared: accepted, or why not.
func outcome(t TaskOutcome) string {
	checks := fmt.Sprintf("%d/%d checks", t.ChecksPassed, t.ChecksTotal)
	if t.Accepted {
		return "accepted, " + checks
	}
	why := "not integrated"
	if t.Integrated {
		why = "integrated"
	}
	if t.GateStatus != "succeeded" {
		why = "gates: " + t.GateStatus
		if t.GateReason != "" {
			why += " (" + strings.Fields(t.GateReason)[0] + ")"
		}
	}
	return "rejected, " + why + ", " + checks
}

// Chart compares the arms on the judged axes, each relative to the larger
// of the two (1 = the larger): quality, time to the last integration and
// cost per accepted task (left out when a cost is not known). Each bar is
// labelled with the arm's measured figure.
func (r *Result) Chart() plot.Chart {
	rel := func(a, b float64) (float64, float64) {
		m := max(a, b)
		if m == 0 || math.IsInf(m, 0) {
			return clampInf(a), clampInf(b)
		}
		return a / m, b / m
	}
	cost := func(a ArmResult) float64 {
		if a.CostPerAccepted == nil {
			return math.Inf(1)
		}
		return *a.CostPerAccepted
	}
	costText := func(a ArmResult) string {
		if a.CostPerAccepted == nil {
			return "none accepted"
		}
		return fmt.Sprintf("$%.4f", *a.CostPerAccepted)
	}
	q1, q2 := rel(r.Single.Quality, r.Swarm.Quality)
	t1, t2 := rel(r.Single.TimeS, r.Swarm.TimeS)
	cats := []string{"quality Q: more=good", "time: less=good"}
	single := plot.Series{Name: "single agent", Y: []float64{q1, t1},
		Labels: []string{fmt.Sprintf("%.2f", r.Single.Quality), fmt.Sprintf("%.1fs", r.Single.TimeS)}}
	swarm := plot.Series{Name: "swarm", Y: []float64{q2, t2},
		Labels: []string{fmt.Sprintf("%.2f", r.Swarm.Quality), fmt.Sprintf("%.1fs", r.Swarm.TimeS)}}
	if r.CostKnown {
		c1, c2 := rel(cost(r.Single), cost(r.Swarm))
		cats = append(cats, "$/accepted: less=good")
		single.Y, single.Labels = append(single.Y, c1), append(single.Labels, costText(r.Single))
		swarm.Y, swarm.Labels = append(swarm.Y, c2), append(swarm.Labels, costText(r.Swarm))
	}
	return plot.Chart{Kind: plot.Bar, Title: fmt.Sprintf("%s: single agent vs swarm, %s each", r.TaskSet, budgetText(r.Inputs.Budget)),
		Y:          plot.Axis{Label: "value / the larger of the two", Min: 0, Max: 1},
		Categories: cats, Values: true,
		Series: []plot.Series{single, swarm}}
}

// clampInf maps v relative to a maximum that is 0 or infinite: infinite
// values become 1 and finite ones 0.
func clampInf(v float64) float64 {
	if math.IsInf(v, 1) {
		return 1
	}
	return 0
}
