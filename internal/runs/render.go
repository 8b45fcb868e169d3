package runs

import (
	"context"
	"encoding/json"
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
		switch {
		case tr.Integrated != nil:
			integ = *tr.Integrated
		case tr.NoChange:
			integ = "no change"
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%.1fs\t%s\n", tr.ID, tr.Status, att, integ, commit,
			tr.Usage.InputTokens, tr.Usage.OutputTokens, tr.Usage.cost(false), tr.WallS, why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nintegrations: %d fast-forward, %d merge, %d reconciled; %d gate rejection(s); %d CAS retr%s\n",
		t.Integrated[attempt.FastForward], t.Integrated[attempt.Merge], t.Integrated[attempt.Reconciled], t.GateRejections, r.CASRetries, plural(r.CASRetries, "y", "ies"))
	fmt.Fprintf(w, "usage: %d input + %d output tokens, %s", t.Usage.InputTokens, t.Usage.OutputTokens, t.Usage.cost(true))
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
	if c := r.Checkout; c != nil {
		if c.Synced {
			fmt.Fprintf(w, "checkout: %s brought to %s\n", r.IntegrationBranch, short(c.Commit))
		} else {
			fmt.Fprintf(w, "checkout: NOT brought along: %s\n  to finish: %s\n", c.Reason, c.Hint)
		}
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

// cost is the dollars of u, "n/a" when nothing measured them; with sign
// a "$" leads the figure.
func (u TokenUsage) cost(sign bool) string {
	switch {
	case !u.Known:
		return "n/a"
	case sign:
		return fmt.Sprintf("$%.4f", u.USD)
	}
	return fmt.Sprintf("%.4f", u.USD)
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
		switch {
		case ev.Status != "succeeded":
			p.failed++
			line = statusLine(name, ev.Status, ev.Reason)
		case ev.Reason != "" && ev.Integrated == "":
			line = fmt.Sprintf("%s: succeeded, but %s", name, attempt.Clip(attempt.FirstLine(ev.Reason), 100))
		}
	case rundir.EvEscrowRequested:
		if ev.Status == EscrowDenied {
			line = fmt.Sprintf("%s: %s refused: escrow request %s was denied at once (outside the authority of the task tree)", name, ev.Reason, ev.Path)
		} else {
			line = fmt.Sprintf("%s: waits for a human to approve %s (escrow request %s): apiary escrow approve %s", name, ev.Reason, ev.Path, ev.Path)
		}
	case rundir.EvEscrowDecided:
		line = fmt.Sprintf("%s: escrow request %s %s", name, ev.Path, ev.Status)
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

// statusLine is "name: status: reason" for a task that did not succeed,
// without the status word again when the reason starts with it
// ("cancelled: cancelled by the operator" reads "cancelled by the operator").
func statusLine(name, status, reason string) string {
	why := attempt.Clip(attempt.FirstLine(reason), 100)
	if why == "" {
		return name + ": " + status
	}
	if rest, ok := strings.CutPrefix(strings.ToLower(why), strings.ToLower(status)); ok && (rest == "" || rest[0] == ':' || rest[0] == ' ') {
		return name + ": " + why
	}
	return fmt.Sprintf("%s: %s: %s", name, status, why)
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

// Watched starts (or, with resume, resumes) a run with prog shown: every
// event goes to cfg.OnEvent, if set, then to prog, and once the run exists
// (the plan and the repository passed their checks) "run RUN_ID" is
// written to head. prog is closed when the run returns.
func Watched(ctx context.Context, cfg Config, nr NewRun, resume bool, head io.Writer, prog *Progress) (*Report, error) {
	announced := false
	observe := cfg.OnEvent
	cfg.OnEvent = func(ev Event) {
		if observe != nil {
			observe(ev)
		}
		if !announced && (ev.Kind == rundir.EvRunStarted || ev.Kind == rundir.EvRunResumed) {
			announced = true
			fmt.Fprintf(head, "run %s\n", ev.Run)
		}
		prog.Event(ev)
	}
	defer prog.Close()
	if resume {
		return Resume(ctx, cfg, nr.ID)
	}
	return Start(ctx, cfg, nr)
}

// WriteReport prints rep as text, or as indented JSON.
func WriteReport(w io.Writer, rep *Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(w)
}
