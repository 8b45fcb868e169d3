package runs

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// WriteText renders the report for people: a header, one row per task, the
// integrations, where tokens and money went, and the critical paths.
func (r *Report) WriteText(w io.Writer) error {
	t := r.Totals
	fmt.Fprintf(w, "run %s: %s — %d of %d tasks succeeded", r.RunID, r.Status, t.Succeeded, t.Tasks)
	for _, x := range []struct {
		n    int
		what string
	}{{t.Failed, "failed"}, {t.Skipped, "skipped"}, {t.Cancelled, "cancelled"}, {t.Unfinished, "unfinished"}} {
		if x.n > 0 {
			fmt.Fprintf(w, ", %d %s", x.n, x.what)
		}
	}
	fmt.Fprintf(w, " (branch %s, %.1fs)\n", r.IntegrationBranch, r.WallS)
	if r.Goal != "" {
		fmt.Fprintf(w, "goal: %s\n", attempt.FirstLine(r.Goal))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTASK\tSTATUS\tATTEMPTS\tINTEGRATED\tCOMMIT\tTOKENS IN/OUT\tUSD\tWALL\tGATE / REASON")
	rows := r.Tasks
	if r.Planner != nil {
		rows = append([]TaskReport{*r.Planner}, rows...)
	}
	for _, tr := range rows {
		commit := "-"
		if tr.Commit != nil {
			commit = (*tr.Commit)[:min(len(*tr.Commit), 10)]
		}
		integ := "-"
		if tr.Integrated != nil {
			integ = *tr.Integrated
		}
		why := ""
		switch {
		case tr.Gate != nil:
			why = gateText(tr)
		case tr.Reason != "":
			why = attempt.Clip(attempt.FirstLine(tr.Reason), 80)
		}
		att := fmt.Sprint(tr.Attempts)
		if tr.Reconciliations > 0 {
			att += fmt.Sprintf("+%dr", tr.Reconciliations)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%.4f\t%.1fs\t%s\n", tr.ID, tr.Status, att, integ, commit,
			tr.Usage.InputTokens, tr.Usage.OutputTokens, tr.Usage.USD, tr.WallS, why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nintegrations: %d fast-forward, %d merge, %d reconciled; %d gate rejection(s); %d CAS retr%s\n",
		t.Integrated[attempt.FastForward], t.Integrated[attempt.Merge], t.Integrated[attempt.Reconciled], t.GateRejections, r.CASRetries, plural(r.CASRetries, "y", "ies"))
	fmt.Fprintf(w, "usage: %d input + %d output tokens, $%.4f", t.Usage.InputTokens, t.Usage.OutputTokens, t.Usage.USD)
	var parts []string
	for _, s := range r.Shares {
		if s.InputTokens+s.OutputTokens > 0 || s.USD > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f%% of tokens, %.0f%% of cost", s.Role, 100*s.TokenShare, 100*s.CostShare))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, " — %s", strings.Join(parts, "; "))
	}
	fmt.Fprintln(w)
	if ms := modelsText(rows); ms != "" {
		fmt.Fprintf(w, "models: %s\n", ms)
	}
	if len(r.Predicted.Tasks) > 0 {
		fmt.Fprintf(w, "critical path: predicted %s (%.1fs by estimate_s); achieved %s (%.1fs)\n",
			strings.Join(r.Predicted.Tasks, " → "), r.Predicted.Seconds, pathText(r.Achieved), r.Achieved.Seconds)
	}
	return nil
}

// modelsText names the profiles and models the attempts ran with, by role,
// with how many attempts each: "worker w (claude-haiku-4-5) ×5".
func modelsText(rows []TaskReport) string {
	type key struct{ role, agent, model string }
	n := map[key]int{}
	var order []key
	for _, tr := range rows {
		for _, m := range tr.Models {
			k := key{m.Role, m.Agent, m.Model}
			if n[k] == 0 {
				order = append(order, k)
			}
			n[k]++
		}
	}
	var parts []string
	for _, k := range order {
		model := k.model
		if model == "" {
			model = "the CLI's default model"
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s) ×%d", k.role, k.agent, model, n[k]))
	}
	return strings.Join(parts, "; ")
}

func gateText(tr TaskReport) string {
	g := tr.Gate
	s := g.Gate
	if g.Pattern != "" {
		s += "/" + g.Pattern
	}
	if g.File != "" && g.Gate != "check" {
		s += " " + g.File
		if g.Line > 0 {
			s += fmt.Sprintf(":%d", g.Line)
		}
	}
	return s + ": " + attempt.Clip(attempt.FirstLine(g.Detail), 80)
}

func pathText(p Path) string {
	if len(p.Tasks) == 0 {
		return "(none)"
	}
	return strings.Join(p.Tasks, " → ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Progress renders a run's events as they happen: on a terminal, one status
// bar redrawn in place; otherwise one plain line per notable event. Its
// Event method is a Config.OnEvent hook; Close ends the display. Safe for
// concurrent use.
type Progress struct {
	W   io.Writer
	TTY bool

	mu       sync.Mutex
	start    time.Time
	total    int
	done     int
	failed   int
	running  map[string]bool
	drawn    bool
	finished bool
}

// Event updates the display with ev.
func (p *Progress) Event(ev Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == nil {
		p.running = map[string]bool{}
	}
	if p.start.IsZero() {
		p.start = ev.Time
	}
	line := ""
	name := ev.Task
	if ev.Role == attempt.RolePlanner {
		name = "planner"
	}
	switch ev.Kind {
	case rundir.EvRunStarted, rundir.EvRunResumed:
		p.total += ev.Tasks
		if ev.Kind == rundir.EvRunResumed {
			line = fmt.Sprintf("run %s resumed: %d task(s) to do", ev.Run, ev.Tasks)
		} else if ev.Role != attempt.RolePlanner {
			line = fmt.Sprintf("run %s: %d tasks on %s", ev.Run, ev.Tasks, ev.Branch)
		} else {
			line = fmt.Sprintf("run %s: planning", ev.Run)
		}
	case rundir.EvPlanned:
		p.total += ev.Tasks
		line = fmt.Sprintf("plan accepted: %d tasks", ev.Tasks)
	case rundir.EvChildAdded:
		p.total++
		line = fmt.Sprintf("%s: added by %s", ev.Task, ev.Parent)
	case rundir.EvAttemptStarted:
		p.running[name] = true
		what := "attempt"
		if ev.Role == attempt.RoleReconciler {
			what = "reconciliation of attempt"
		}
		line = fmt.Sprintf("%s: %s %d started on %.10s", name, what, ev.Attempt, ev.Base)
	case rundir.EvAttemptFinished:
		delete(p.running, name)
	case rundir.EvConflict:
		line = fmt.Sprintf("%s: overlaps the branch on %s: reconciling", name, strings.Join(ev.Paths, ", "))
	case rundir.EvGateRejected:
		line = fmt.Sprintf("%s: rejected by gate %s", name, gateText(TaskReport{Gate: ev.Gate}))
	case rundir.EvCASRetry:
		line = fmt.Sprintf("%s: the branch moved under the integration (CAS failed): recomputing", name)
	case rundir.EvIntegrated:
		line = fmt.Sprintf("%s: integrated (%s) as %.10s", name, ev.Integrated, ev.Commit)
	case rundir.EvTaskDone:
		p.done++
		if ev.Status != "succeeded" {
			p.failed++
			line = fmt.Sprintf("%s: %s: %s", name, ev.Status, attempt.Clip(attempt.FirstLine(ev.Reason), 100))
		}
	case rundir.EvRunFinished:
		p.finished = true
		line = fmt.Sprintf("run %s", ev.Status)
	}
	if p.TTY {
		p.drawBar(ev, line)
		return
	}
	if line != "" {
		fmt.Fprintf(p.W, "%6.1fs %s\n", ev.Time.Sub(p.start).Seconds(), line)
	}
}

// drawBar redraws the status bar; notable lines scroll above it.
func (p *Progress) drawBar(ev Event, line string) {
	const width = 24
	if line != "" {
		fmt.Fprintf(p.W, "\r\033[K%6.1fs %s\n", ev.Time.Sub(p.start).Seconds(), line)
	}
	if p.finished {
		p.drawn = false
		return
	}
	filled := 0
	if p.total > 0 {
		filled = width * p.done / p.total
	}
	names := make([]string, 0, len(p.running))
	for n := range p.running {
		names = append(names, n)
	}
	slices.Sort(names)
	fmt.Fprintf(p.W, "\r\033[K[%s%s] %d/%d done", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.done, p.total)
	if p.failed > 0 {
		fmt.Fprintf(p.W, ", %d not succeeded", p.failed)
	}
	if len(names) > 0 {
		fmt.Fprintf(p.W, " · running: %s", attempt.Clip(strings.Join(names, " "), 60))
	}
	p.drawn = true
}

// Close ends the bar's line, if one is drawn.
func (p *Progress) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.W, "\r\033[K")
		p.drawn = false
	}
}
