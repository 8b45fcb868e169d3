package sim

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/apiary-dev/apiary/internal/plan"
)

// WriteText prints the spread analysis (it follows the plan's analysis in
// `apiary plan analyze`): the makespan's percentiles with each task once
// and with the policies, and each speculative task's.
func (t *PlanTail) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "\nspread: p90 = %g x estimate", t.P90Ratio)
	if t.StragglerProb > 0 {
		fmt.Fprintf(w, ", %s of attempts straggle %gx", Pct(t.StragglerProb), t.StragglerFactor)
	}
	fmt.Fprintf(w, " (makespan: %d Monte Carlo trials, seed %d)\n", t.Trials, t.Seed)
	row := func(name string, ps []Percentile, mean float64) []string {
		r := []string{name}
		for _, pc := range ps {
			r = append(r, Percentile{Q: pc.Q, S: pc.S}.String())
		}
		return append(r, Secs4(mean))
	}
	head := []string{"makespan"}
	for _, pc := range t.Makespan.Single {
		head = append(head, "p"+strconv.FormatFloat(pc.Q*100, 'f', -1, 64))
	}
	head = append(head, "mean")
	rows := [][]string{head,
		row("  each task once", t.Makespan.Single, t.Makespan.MeanSingleS),
		row("  with the policies", t.Makespan.WithPolicies, t.Makespan.MeanPolicyS)}
	if len(t.Tasks) > 0 {
		rows = append(rows, []string{"speculative tasks"})
	}
	for _, tt := range t.Tasks {
		rows = append(rows, row("  "+tt.ID+" once", tt.Single.Percentiles, tt.Single.MeanS),
			row("  "+tt.ID+" "+tt.Policy.String(), tt.WithPolicy.Percentiles, tt.WithPolicy.MeanS))
	}
	width := make([]int, len(head))
	for _, r := range rows {
		if len(r) == 1 {
			continue
		}
		for c, cell := range r {
			width[c] = max(width[c], len(cell))
		}
	}
	for _, r := range rows {
		if len(r) == 1 {
			fmt.Fprintln(w, r[0])
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%-*s", width[0], r[0])
		for c := 1; c < len(r); c++ {
			fmt.Fprintf(&b, "  %*s", width[c], r[c])
		}
		fmt.Fprintln(w, b.String())
	}
	for _, tt := range t.Tasks {
		fmt.Fprintf(w, "%s: attempt-seconds %s once, %s with its policy\n", tt.ID, Secs4(tt.Single.AttemptS), Secs4(tt.WithPolicy.AttemptS))
	}
	return nil
}

// PlanAnalysis is `apiary plan analyze`'s output: the plan's analysis and,
// with spread estimates, its tail.
type PlanAnalysis struct {
	*plan.Analysis
	Tail *PlanTail `json:"tail,omitempty"`
}

// WriteText prints the analysis of the plan in file, then the tail if any.
func (a PlanAnalysis) WriteText(w io.Writer, file string) error {
	if err := a.Analysis.WriteText(w, file); err != nil {
		return err
	}
	if a.Tail != nil {
		return a.Tail.WriteText(w)
	}
	return nil
}
