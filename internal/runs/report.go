package runs

import (
	"slices"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// Report is a run as its files tell it: per task and in total, tokens,
// dollars, wall time, attempts, the gate that rejected a task and how it
// was integrated; where the tokens and money went by role; the critical
// path the plan predicted and the one the run achieved. LoadReport builds
// it from disk only, so `apiary status` and `apiary run` print the same.
type Report struct {
	RunID             string       `json:"run_id"`
	Repo              string       `json:"repo"`
	IntegrationBranch string       `json:"integration_branch"`
	StartHead         string       `json:"start_head"`
	Status            string       `json:"status"` // succeeded | failed | interrupted (or killed) | running
	Goal              string       `json:"goal,omitempty"`
	Planner           *TaskReport  `json:"planner,omitempty"`
	Tasks             []TaskReport `json:"tasks"`
	Totals            Totals       `json:"totals"`
	Shares            []Share      `json:"shares"`
	Predicted         Path         `json:"predicted_critical_path"`
	Achieved          Path         `json:"achieved_critical_path"`
	WallS             float64      `json:"wall_s"`
	CASRetries        int          `json:"cas_retries"`
	Started           time.Time    `json:"started"`
	// Checkout is how the run left the main checkout, when that has the
	// integration branch out; nil otherwise.
	Checkout *CheckoutReport `json:"checkout,omitempty"`
}

// CheckoutReport says whether the main checkout was brought to the
// integrated work.
type CheckoutReport struct {
	Synced bool   `json:"synced"`
	Commit string `json:"commit,omitempty"` // what the checkout holds
	Reason string `json:"reason,omitempty"` // why not
	Hint   string `json:"hint,omitempty"`   // how to finish
}

// TaskReport is one task of a Report.
type TaskReport struct {
	ID         string               `json:"id"`
	Status     string               `json:"status"` // succeeded | failed | cancelled | skipped (running | pending while the run goes on)
	Attempts   int                  `json:"attempts"`
	Gate       *envelope.GateReason `json:"gate"`
	Commit     *string              `json:"commit"`
	Integrated *string              `json:"integrated"` // fast-forward | merge | reconciled | null
	Usage      TokenUsage           `json:"usage"`
	// WallS is the task's time from its first dispatch to its receipt.
	WallS  float64 `json:"wall_s"`
	Reason string  `json:"reason,omitempty"`
	// NoChange: the task succeeded with nothing to integrate (its agent
	// changed nothing).
	NoChange        bool   `json:"no_change,omitempty"`
	Parent          string `json:"parent,omitempty"`
	Reconciliations int    `json:"reconciliations,omitempty"`
	// Models names, attempt by attempt, the profile and model each ran
	// with.
	Models []AttemptModel `json:"models,omitempty"`
}

// AttemptModel is the agent profile and model of one attempt ("" model:
// the CLI's default).
type AttemptModel struct {
	Attempt int    `json:"attempt"`
	Role    string `json:"role"`
	Agent   string `json:"agent,omitempty"`
	Model   string `json:"model,omitempty"`
}

// TokenUsage is tokens and dollars. Known is false when nothing measured
// them (no run gateway, and an agent that reports nothing): USD is then
// not a figure, and the text says "n/a", not $0 — the dashboard's rule.
type TokenUsage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	USD          float64 `json:"usd"`
	Known        bool    `json:"known"`
}

// add counts an attempt's usage; anything recorded makes it known.
func (u *TokenUsage) add(x envelope.Usage) {
	u.sum(TokenUsage{InputTokens: x.InputTokens, OutputTokens: x.OutputTokens, USD: x.USD,
		Known: x.InputTokens+x.OutputTokens > 0 || x.USD > 0})
}

// sum adds x; the sum is known when either part is.
func (u *TokenUsage) sum(x TokenUsage) {
	u.InputTokens += x.InputTokens
	u.OutputTokens += x.OutputTokens
	u.USD += x.USD
	u.Known = u.Known || x.Known
}

// Totals sum a run's tasks.
type Totals struct {
	Tasks          int            `json:"tasks"`
	Succeeded      int            `json:"succeeded"`
	Failed         int            `json:"failed"`
	Cancelled      int            `json:"cancelled"`
	Skipped        int            `json:"skipped"`
	Unfinished     int            `json:"unfinished"`
	Attempts       int            `json:"attempts"`
	Usage          TokenUsage     `json:"usage"`
	Integrated     map[string]int `json:"integrated"`
	GateRejections int            `json:"gate_rejections"`
}

// Share is what one role (planner, worker, reconciler) consumed, and its
// fraction of the run's tokens and dollars.
type Share struct {
	Role       string  `json:"role"`
	TokenUsage         // embedded: input_tokens, output_tokens, usd, known
	TokenShare float64 `json:"token_share"`
	CostShare  float64 `json:"cost_share"`
}

// Path is a critical path: task ids in order and its length.
type Path struct {
	Tasks   []string `json:"tasks"`
	Seconds float64  `json:"seconds"`
}

// OK reports whether every task succeeded.
func (r *Report) OK() bool { return r.Status == "succeeded" }

// Task returns the report of the named task, or nil.
func (r *Report) Task(id string) *TaskReport {
	for i := range r.Tasks {
		if r.Tasks[i].ID == id {
			return &r.Tasks[i]
		}
	}
	return nil
}

// LoadReport reads run id of the repository at root from disk.
func LoadReport(root, id string) (*Report, error) {
	d := rundir.Open(root, id)
	rec, err := d.Record()
	if err != nil {
		return nil, err
	}
	evs, _, err := d.Events()
	if err != nil {
		return nil, err
	}
	rep := &Report{RunID: id, Repo: rec.Repo, IntegrationBranch: rec.IntegrationBranch, StartHead: rec.StartHead,
		Goal: rec.Goal, Status: "running", Started: rec.Created, Tasks: []TaskReport{},
		Totals: Totals{Integrated: map[string]int{}}}
	p, err := d.ParsePlan(rec)
	if err != nil {
		return nil, err
	}
	tl := timeline(evs)
	rep.CASRetries, rep.Status = tl.casRetries, tl.status
	if rep.Status == "running" && !d.Active() {
		rep.Status = "interrupted" // its process is gone (killed)
	}
	// Tasks: the plan's in order, then children in the order they were added.
	names := []string{}
	if p != nil {
		for _, t := range p.Tasks {
			names = append(names, t.ID)
		}
	}
	names = append(names, tl.children...)
	roles := map[string]*TokenUsage{}
	for _, role := range []string{attempt.RolePlanner, attempt.RoleWorker, attempt.RoleReconciler} {
		roles[role] = &TokenUsage{}
	}
	for _, ev := range evs {
		if ev.Kind == rundir.EvAttemptFinished && ev.Usage != nil && roles[ev.Role] != nil {
			roles[ev.Role].add(*ev.Usage)
		}
	}
	for _, n := range names {
		tr, err := taskReport(d.Task(n), n, tl, rep.Status)
		if err != nil {
			return nil, err
		}
		rep.Tasks = append(rep.Tasks, *tr)
		rep.Totals.add(tr)
	}
	if rec.Goal != "" {
		pr, err := taskReport(d.Planner(), "", tl, rep.Status)
		if err != nil {
			return nil, err
		}
		pr.ID = attempt.RolePlanner
		rep.Planner = pr
		rep.Totals.Usage.sum(pr.Usage)
	}
	rep.Shares = shares(roles)
	if p != nil {
		cp, secs := p.CriticalPath()
		rep.Predicted = Path{Tasks: cp, Seconds: secs}
		rep.Achieved = achieved(p, tl)
	}
	if !tl.first.IsZero() {
		rep.WallS = tl.last.Sub(tl.first).Seconds()
	}
	for _, ev := range evs {
		if ev.Kind == rundir.EvCheckoutSynced {
			rep.Checkout = &CheckoutReport{Synced: ev.Reason == "", Commit: ev.Commit, Reason: ev.Reason, Hint: ev.Path}
			if ev.Reason != "" {
				rep.Checkout.Commit = ev.Base
			}
		}
	}
	return rep, nil
}

func (t *Totals) add(tr *TaskReport) {
	t.Tasks++
	switch tr.Status {
	case "succeeded":
		t.Succeeded++
	case "failed":
		t.Failed++
	case "cancelled":
		t.Cancelled++
	case "skipped":
		t.Skipped++
	default:
		t.Unfinished++
	}
	t.Attempts += tr.Attempts
	t.Usage.sum(tr.Usage)
	if tr.Integrated != nil {
		t.Integrated[*tr.Integrated]++
	}
	if tr.Gate != nil {
		t.GateRejections++
	}
}

// taskReport reads one task's receipt (or, without one, its events).
func taskReport(dir rundir.Task, name string, tl *runTimeline, runStatus string) (*TaskReport, error) {
	tr := &TaskReport{ID: name, Status: "pending", Parent: tl.parent[name]}
	rc, err := dir.Receipt()
	if err != nil {
		return nil, err
	}
	span := tl.tasks[name]
	if span != nil {
		tr.Attempts, tr.Reconciliations, tr.Models = span.attempts, span.reconciles, span.models
		tr.Usage.add(span.usage)
		if !span.start.IsZero() {
			end := span.end
			if end.IsZero() {
				end = tl.last
			}
			tr.WallS = end.Sub(span.start).Seconds()
		}
		if span.running {
			tr.Status = "running"
		}
	}
	if rc == nil {
		if runStatus != "running" {
			tr.Status = string(envelope.StatusCancelled)
			tr.Reason = "the run ended before this task did"
		}
		return tr, nil
	}
	tr.Status, tr.Gate, tr.Integrated, tr.Reason = string(rc.Status), rc.Gate, rc.Integrated, rc.Reason
	tr.Attempts = max(tr.Attempts, rc.Attempt)
	tr.NoChange = rc.Status == envelope.StatusSucceeded && rc.Integrated == nil
	if rc.Commit != "" {
		c := rc.Commit
		tr.Commit = &c
	}
	// The receipt's usage is the truth when it has more (usage restored
	// from the branch has none).
	if rc.Usage.InputTokens+rc.Usage.OutputTokens > tr.Usage.InputTokens+tr.Usage.OutputTokens || rc.Usage.USD > tr.Usage.USD {
		tr.Usage = TokenUsage{}
		tr.Usage.add(rc.Usage)
	}
	return tr, nil
}

func shares(roles map[string]*TokenUsage) []Share {
	var tokens int64
	var usd float64
	for _, u := range roles {
		tokens += u.InputTokens + u.OutputTokens
		usd += u.USD
	}
	var out []Share
	for _, role := range []string{attempt.RolePlanner, attempt.RoleWorker, attempt.RoleReconciler} {
		u := roles[role]
		s := Share{Role: role, TokenUsage: *u}
		if tokens > 0 {
			s.TokenShare = float64(u.InputTokens+u.OutputTokens) / float64(tokens)
		}
		if usd > 0 {
			s.CostShare = u.USD / usd
		}
		out = append(out, s)
	}
	return out
}

// achieved is the critical path the run actually followed: from the task
// that finished last, back through the dependency that finished last before
// it (the one that released it), with the time from the first one's start
// to the last one's end.
func achieved(p *plan.Plan, tl *runTimeline) Path {
	var last string
	for name, s := range tl.tasks {
		if !s.end.IsZero() && (last == "" || s.end.After(tl.tasks[last].end) || s.end.Equal(tl.tasks[last].end) && name < last) {
			last = name
		}
	}
	if last == "" {
		return Path{Tasks: []string{}}
	}
	deps := func(name string) []string {
		var out []string
		if t := p.Task(name); t != nil {
			for _, d := range t.Deps {
				out = append(out, d.Task)
			}
		}
		if parent := tl.parent[name]; parent != "" {
			out = append(out, parent)
		}
		return out
	}
	path := []string{last}
	for cur := last; ; {
		var next string
		for _, d := range deps(cur) {
			if s := tl.tasks[d]; s != nil && !s.end.IsZero() && (next == "" || s.end.After(tl.tasks[next].end)) {
				next = d
			}
		}
		if next == "" || slices.Contains(path, next) {
			break
		}
		path = append(path, next)
		cur = next
	}
	slices.Reverse(path)
	first := tl.tasks[path[0]]
	return Path{Tasks: path, Seconds: tl.tasks[last].end.Sub(first.start).Seconds()}
}
