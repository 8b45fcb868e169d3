package plan

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteText prints the analysis of the plan in file for a person: the
// work, the critical path, the width, the makespan and the speedup
// bounds, then the list schedule.
func (a *Analysis) WriteText(w io.Writer, file string) error {
	secs := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) + " s" }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s: %d tasks on %d workers\n", file, a.Tasks, a.Workers)
	fmt.Fprintf(tw, "work\t%s\n", secs(a.WorkS))
	fmt.Fprintf(tw, "critical path\t%s\t%s\n", secs(a.CriticalPathS), strings.Join(a.CriticalPath, " → "))
	exact := "maximum antichain"
	if !a.WidthExact {
		exact = fmt.Sprintf("widest level: a lower bound, exact only up to %d tasks", MaxExactWidthTasks)
	}
	fmt.Fprintf(tw, "width\t%d\t(%s: %s)\n", a.Width, exact, abbreviate(a.Antichain, 8))
	fmt.Fprintf(tw, "level width\t%d\t(widest of %d levels; peak parallelism %d)\n", a.LevelWidth, a.Levels, a.PeakParallelism)
	fmt.Fprintf(tw, "makespan\t%s\t(list schedule, critical path first)\n", secs(a.MakespanS))
	fmt.Fprintf(tw, "speedup\t%.2f\t(work-span bound %.2f; Amdahl bound %.2f with serial fraction %.2f)\n", a.Speedup, a.SpanBound, a.AmdahlBound, a.SerialFraction)
	if err := tw.Flush(); err != nil {
		return err
	}
	if a.DefaultedEstimates > 0 {
		fmt.Fprintf(w, "note: %d task(s) have no estimate_s and count as %v s\n", a.DefaultedEstimates, DefaultEstimateS)
	}
	if len(a.Schedule) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "\ntask\tworker\tstart\tfinish")
		for _, s := range a.Schedule {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", s.ID, s.Worker, secs(s.StartS), secs(s.FinishS))
		}
		return tw.Flush()
	}
	return nil
}

// abbreviate joins the first n ids with ", " and says how many more.
func abbreviate(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:n], ", "), len(ids)-n)
}
