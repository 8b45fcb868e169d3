package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// Report is a swarm run as the board tells it.
type Report struct {
	Run               string                `json:"run"`
	Status            string                `json:"status"` // succeeded | failed | running
	Remote            string                `json:"remote"`
	IntegrationBranch string                `json:"integration_branch"`
	StartHead         string                `json:"start_head"`
	Tasks             []TaskReport          `json:"tasks"`
	Totals            Totals                `json:"totals"`
	Merge             *MergeStats           `json:"merge,omitempty"`
	Cooldown          bool                  `json:"cooldown"`
	Workers           []layout.WorkerRecord `json:"workers"`
	Conflicts         []board.Conflict      `json:"conflicts"`
	Hints             []board.Hint          `json:"hints"`
	Hot               []HotFile             `json:"hot_files"`
	Duplicates        []Duplicate           `json:"duplicates"`
	Patterns          []IntentPattern       `json:"intent_patterns,omitempty"`
}

// TaskReport is one task of a SwarmReport.
type TaskReport struct {
	ID         string   `json:"id"`
	Status     string   `json:"status"` // done | failed | cancelled | running | ready | pending
	Attempts   int      `json:"attempts"`
	Worker     string   `json:"worker,omitempty"`  // the last attempt's
	Workers    []string `json:"workers,omitempty"` // every attempt's
	Token      int64    `json:"token,omitempty"`
	Commit     string   `json:"commit,omitempty"`
	Integrated string   `json:"integrated,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Notes      []string `json:"notes,omitempty"`
	// Usage is what the task's attempts spent, as recorded so far; Spent
	// is each attempt's share (a hedge's or quorum's losers included).
	Usage envelope.Usage        `json:"usage"`
	Spent []layout.AttemptSpend `json:"spent,omitempty"`
	// Succ are the tasks that depend on this one, by name.
	Succ []string `json:"succ,omitempty"`
}

// Totals count a run's tasks by status.
type Totals struct {
	Tasks     int `json:"tasks"`
	Done      int `json:"done"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Running   int `json:"running"`
	Waiting   int `json:"waiting"` // ready or pending
	Attempts  int `json:"attempts"`
	// Usage sums the tasks'.
	Usage envelope.Usage `json:"usage"`
}

// OK reports whether every task is done.
func (r *Report) OK() bool { return r.Totals.Done == r.Totals.Tasks }

// Task returns the report of task name, or a zero report.
func (r *Report) Task(name string) TaskReport {
	for _, t := range r.Tasks {
		if t.ID == name {
			return t
		}
	}
	return TaskReport{}
}

// LoadReport reads run's report from the board.
func LoadReport(ctx context.Context, st *board.Store, run string) (*Report, error) {
	r, err := layout.ReadRecord(ctx, st, run)
	if err != nil {
		return nil, err
	}
	rep := &Report{Run: run, Remote: r.Remote, IntegrationBranch: r.IntegrationBranch, StartHead: r.StartHead,
		Workers: []layout.WorkerRecord{}, Conflicts: []board.Conflict{}, Hints: []board.Hint{}, Hot: []HotFile{}, Duplicates: []Duplicate{}}
	tasks, err := layout.RunTasks(ctx, st, run)
	if err != nil {
		return nil, err
	}
	byName := map[string]TaskReport{}
	for _, t := range tasks {
		p, err := layout.DecodePayload(t)
		if err != nil {
			return nil, err
		}
		tr := TaskReport{ID: p.Name, Status: string(t.Status), Attempts: t.Attempts, Worker: t.Worker, Workers: p.Workers,
			Token: t.Token, Commit: p.Commit, Integrated: p.Integrated, Reason: p.Reason, Notes: p.Notes, Usage: p.Usage, Spent: p.Spent, Succ: p.Succ}
		byName[p.Name] = tr
		rep.Totals.Attempts += t.Attempts
		rep.Totals.Usage.Add(p.Usage)
		switch t.Status {
		case board.TaskDone:
			rep.Totals.Done++
		case board.TaskFailed:
			rep.Totals.Failed++
		case board.TaskCancelled:
			rep.Totals.Cancelled++
		case board.TaskRunning:
			rep.Totals.Running++
		default:
			rep.Totals.Waiting++
		}
	}
	for _, name := range r.Tasks {
		if tr, ok := byName[name]; ok {
			rep.Tasks = append(rep.Tasks, tr)
		}
	}
	rep.Totals.Tasks = len(rep.Tasks)
	switch {
	case rep.Totals.Running+rep.Totals.Waiting > 0:
		rep.Status = "running"
	case rep.OK():
		rep.Status = "succeeded"
	default:
		rep.Status = "failed"
	}
	if kv, err := st.Get(ctx, statsKey(run)); err == nil {
		var ms MergeStats
		if json.Unmarshal(kv.Value, &ms) == nil {
			rep.Merge = &ms
		}
	}
	if _, err := st.Get(ctx, layout.CooldownKey(run)); err == nil {
		rep.Cooldown = true
	} else if !errors.Is(err, board.ErrNotFound) {
		return nil, err
	}
	if err := listJSON(ctx, st, layout.WorkersPrefix(run), &rep.Workers); err != nil {
		return nil, err
	}
	if err := listJSON(ctx, st, layout.MergePrefix(run)+"hot/", &rep.Hot); err != nil {
		return nil, err
	}
	if err := listJSON(ctx, st, layout.MergePrefix(run)+"dups/", &rep.Duplicates); err != nil {
		return nil, err
	}
	if err := listJSON(ctx, st, layout.ArchivePrefix(run), &rep.Patterns); err != nil {
		return nil, err
	}
	conflicts, err := st.Conflicts(ctx)
	if err != nil {
		return nil, err
	}
	types := map[string]bool{}
	for _, c := range conflicts {
		if slices.ContainsFunc(c.Tasks, func(t string) bool { return strings.HasPrefix(t, run+"/") }) {
			rep.Conflicts = append(rep.Conflicts, c)
			types[c.Type] = true
		}
	}
	hints, err := st.Hints(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, h := range hints {
		if types[h.Type] {
			rep.Hints = append(rep.Hints, h)
		}
	}
	return rep, nil
}

// listJSON decodes every value under prefix into *out (a slice).
func listJSON[T any](ctx context.Context, st *board.Store, prefix string, out *[]T) error {
	kvs, _, err := st.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		var v T
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			return fmt.Errorf("%w: %s: %v", layout.ErrBadRun, kv.Key, err)
		}
		*out = append(*out, v)
	}
	return nil
}

// WriteText prints the report for people: the tasks, each recorded
// attempt, the totals and what the merge role found.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run %s (swarm): %s — %d/%d done, %d failed, %d cancelled, %d attempts\n", r.Run, r.Status,
		r.Totals.Done, r.Totals.Tasks, r.Totals.Failed, r.Totals.Cancelled, r.Totals.Attempts)
	fmt.Fprintln(tw, "TASK\tSTATUS\tATTEMPTS\tWORKER\tINTEGRATED\tCOMMIT\tTOKENS\tUSD\tREASON")
	for _, t := range r.Tasks {
		commit := t.Commit
		if len(commit) > 12 {
			commit = commit[:12]
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", t.ID, t.Status, t.Attempts, t.Worker, orDash(t.Integrated), orDash(commit),
			t.Usage.InputTokens, t.Usage.OutputTokens, usdText(t.Usage, ""), attempt.Clip(t.Reason, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := r.writeAttempts(w); err != nil {
		return err
	}
	u := r.Totals.Usage
	fmt.Fprintf(w, "usage: %d input + %d output tokens, %s\n", u.InputTokens, u.OutputTokens, usdText(u, "$"))
	if m := r.Merge; m != nil {
		fmt.Fprintf(w, "merge role %s: %d integrated in %d batches, %d rejected by checks, %d conflicts, %d with duplicates (%d rejected), %d stale, %d cool-downs\n",
			m.Leader, m.Integrated, m.Batches, m.Rejected, m.Conflicts, m.Duplicates, m.DupRejected, m.Stale, m.Cooldowns)
	}
	for _, d := range r.Duplicates {
		fmt.Fprintf(w, "duplicate (%s, %.2f): %s in %s (task %s) repeats %s in %s\n", d.Kind, d.Ratio, d.Func.Name, d.Func.File, d.Task, d.Of.Name, d.Of.File)
	}
	for _, h := range r.Hot {
		fmt.Fprintf(w, "hot file %s: %d tasks wrote it; suggested task %s: %s\n", h.File, h.Touches, h.Suggestion.ID, h.Suggestion.Objective)
	}
	for _, h := range r.Hints {
		fmt.Fprintf(w, "hint %s [%s]: %s\n", h.Type, h.State, h.Resolution)
	}
	return nil
}

// writeAttempts prints each recorded attempt of every task on a row of
// its own: how it ended, who ran it with which profile and model, what it
// spent. A table apart from the tasks', so that neither gets wider.
func (r *Report) writeAttempts(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := false
	for _, t := range r.Tasks {
		for _, a := range t.Spent {
			if !header {
				fmt.Fprintln(tw, "\nATTEMPT\tOUTCOME\tWORKER\tPROFILE (MODEL)\tTOKENS\tUSD\tWALL")
				header = true
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%.1fs\n", a.Attempt, a.Outcome, orDash(a.Worker), profileText(a),
				a.Usage.InputTokens, a.Usage.OutputTokens, usdText(a.Usage, ""), a.Usage.WallS)
		}
	}
	return tw.Flush()
}

// profileText names an attempt's profile and its model: "sh2 (big-model)",
// "claude (default)" for a profile that names none (its CLI's own), "-"
// when the record does not say.
func profileText(a layout.AttemptSpend) string {
	switch {
	case a.Profile == "":
		return "-"
	case a.Model == "":
		return a.Profile + " (default)"
	}
	return a.Profile + " (" + a.Model + ")"
}

// usdText is u's dollars after sign, "n/a" when nothing measured u (the
// workers' agents reported nothing): unknown, not $0.
func usdText(u envelope.Usage, sign string) string {
	if u.InputTokens+u.OutputTokens == 0 && u.USD == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%s%.4f", sign, u.USD)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Workers lists the live workers of every swarm run on the board, by run.
func Workers(ctx context.Context, st *board.Store) (map[string][]layout.WorkerRecord, error) {
	runs, err := layout.ListRecords(ctx, st)
	if err != nil {
		return nil, err
	}
	out := map[string][]layout.WorkerRecord{}
	for _, r := range runs {
		var ws []layout.WorkerRecord
		if err := listJSON(ctx, st, layout.WorkersPrefix(r.Run), &ws); err != nil {
			return nil, err
		}
		out[r.Run] = ws
	}
	return out, nil
}
