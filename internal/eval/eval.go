package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/runs"
)

// Arm is one of the two runs of an evaluation.
type Arm string

const (
	// Single: one agent is given every task (one plan task) and the
	// whole budget.
	Single Arm = "single"
	// Swarm: one agent per task, dependencies as the task set declares
	// them, the same total budget split by estimate.
	Swarm Arm = "swarm"
)

// Runtime is what an evaluation needs of git and of apiary's runtime. The
// CLI implements it with internal/git, internal/swarm and internal/gate;
// it must be safe to call from one goroutine at a time.
type Runtime interface {
	// InitRepo makes dir, which holds the base files, a git repository on
	// branch main with those files committed.
	InitRepo(ctx context.Context, dir string) error
	// Run runs plan (YAML or JSON) in the repository at dir with the arm's
	// agents and returns the run's report; a run whose tasks fail is not an
	// error.
	Run(ctx context.Context, arm Arm, dir string, plan []byte) (*runs.Report, error)
	// Export writes the tree of revision rev of the repository at dir into
	// the new directory dst.
	Export(ctx context.Context, dir, rev, dst string) error
	// Check runs one check command as apiary's gates run them (sh -c, in
	// its own process group, killed with it at the timeout), with output
	// to c.Log. A failing command is a result, not an error.
	Check(ctx context.Context, c Check) (CheckResult, error)
}

// Check is one check command to run.
type Check struct {
	Command string
	Dir     string
	Log     string
	Timeout time.Duration
}

// CheckResult is how a check ended.
type CheckResult struct {
	Exit     int     `json:"exit"`
	TimedOut bool    `json:"timed_out,omitempty"`
	Seconds  float64 `json:"seconds"`
}

// Options configure an evaluation.
type Options struct {
	// BudgetUSD is the total budget of each arm: the single agent gets all
	// of it, the swarm's tasks shares proportional to their estimates.
	BudgetUSD float64
	// Agent is the profile of every agent of both arms (workers, the
	// single agent and reconcilers); Agent.Env gets APIARY_EVAL_ARM.
	Agent plan.Agent
	// MaxParallel bounds the swarm's agents at once; 0 is the task set's
	// swarm.max_parallel, else one per task.
	MaxParallel int
	// Runtime runs and judges; required.
	Runtime Runtime
	// WorkDir is where the repositories and check scratch trees are made;
	// it must exist. Required.
	WorkDir string
	// Progress, if set, receives one line per step.
	Progress io.Writer
}

// ErrOptions is matched by errors about Options.
var ErrOptions = errors.New("eval: invalid options")

// Run evaluates ts: the single arm, then the swarm arm, then the verdict.
func Run(ctx context.Context, ts *TaskSet, o Options) (*Result, error) {
	switch {
	case o.Runtime == nil || o.WorkDir == "":
		return nil, fmt.Errorf("%w: Runtime and WorkDir are required", ErrOptions)
	case !(o.BudgetUSD > 0 && o.BudgetUSD <= 1e6):
		return nil, fmt.Errorf("%w: budget must be in (0, 1e6] USD, got %g", ErrOptions, o.BudgetUSD)
	case o.MaxParallel < 0 || o.Agent.Kind == "":
		return nil, fmt.Errorf("%w: an agent profile and a non-negative max parallel are required", ErrOptions)
	}
	res := &Result{TaskSet: ts.Name, Tasks: len(ts.Tasks), BudgetUSD: o.BudgetUSD}
	for _, arm := range []Arm{Single, Swarm} {
		ar, err := runArm(ctx, ts, o, arm)
		if err != nil {
			return nil, fmt.Errorf("eval: %s run: %w", arm, err)
		}
		if arm == Single {
			res.Single = *ar
		} else {
			res.Swarm = *ar
		}
	}
	res.finish()
	return res, nil
}

func (o *Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// runArm builds a fresh repository, runs the arm's plan and judges every
// task of the set on the final tree.
func runArm(ctx context.Context, ts *TaskSet, o Options, arm Arm) (*ArmResult, error) {
	base := filepath.Join(o.WorkDir, string(arm))
	repo := filepath.Join(base, "repo")
	if err := copyTree(ts.Repo, repo); err != nil {
		return nil, err
	}
	if err := o.Runtime.InitRepo(ctx, repo); err != nil {
		return nil, err
	}
	planData, err := BuildPlan(ts, arm, o)
	if err != nil {
		return nil, err
	}
	o.progress("eval: %s: running %d task(s) in %s", arm, len(ts.Tasks), repo)
	rep, err := o.Runtime.Run(ctx, arm, repo, planData)
	if err != nil {
		return nil, err
	}
	ar := &ArmResult{Arm: arm, RunID: rep.RunID, Status: rep.Status, Attempted: len(ts.Tasks),
		CriticalPathS: rep.Achieved.Seconds, WallS: rep.WallS, Repo: repo}
	if ar.CriticalPathS == 0 {
		ar.CriticalPathS = rep.WallS
	}
	// What every attempt of every role consumed: workers, reconcilers.
	for _, s := range rep.Shares {
		ar.USD += s.USD
		ar.InputTokens += s.InputTokens
		ar.OutputTokens += s.OutputTokens
	}
	ar.Tokens = ar.InputTokens + ar.OutputTokens
	final := filepath.Join(base, "final")
	if err := o.Runtime.Export(ctx, repo, "refs/heads/"+rep.IntegrationBranch, final); err != nil {
		return nil, err
	}
	for _, t := range ts.Tasks {
		id := t.ID
		if arm == Single {
			id = SingleTaskID
		}
		out := TaskOutcome{ID: t.ID, GateStatus: "missing"}
		if tr := rep.Task(id); tr != nil {
			out.GateStatus = tr.Status
			if tr.Gate != nil {
				out.GateReason = strings.TrimSpace(tr.Gate.Gate + " " + tr.Gate.Pattern + " " + tr.Gate.Detail)
			}
		}
		if err := judgeHidden(ctx, ts, o, t, final, filepath.Join(base, "hidden-"+t.ID), &out); err != nil {
			return nil, err
		}
		out.Accepted = out.GateStatus == "succeeded" && out.HiddenPassed
		if out.Accepted {
			ar.Accepted++
		}
		o.progress("eval: %s: %s: gates %s, hidden checks %s", arm, t.ID, out.GateStatus, passFail(out.HiddenPassed))
		ar.Tasks = append(ar.Tasks, out)
	}
	ar.Quality = float64(ar.Accepted) / float64(ar.Attempted)
	if ar.Accepted > 0 {
		c := ar.USD / float64(ar.Accepted)
		ar.CostPerAccepted = &c
	}
	return ar, nil
}

func passFail(ok bool) string {
	if ok {
		return "passed"
	}
	return "failed"
}

// judgeHidden copies the final tree to scratch, lays the task's hidden
// files over it and runs its hidden checks there, in order, stopping at
// the first failure.
func judgeHidden(ctx context.Context, ts *TaskSet, o Options, t *Task, final, scratch string, out *TaskOutcome) error {
	if err := copyTree(final, scratch); err != nil {
		return err
	}
	if _, err := os.Stat(t.Hidden); err == nil {
		if err := copyTree(t.Hidden, scratch); err != nil {
			return err
		}
	}
	out.HiddenPassed = true
	for i, cmd := range t.HiddenChecks {
		r, err := o.Runtime.Check(ctx, Check{Command: cmd, Dir: scratch, Timeout: time.Duration(ts.CheckTimeoutS * float64(time.Second)),
			Log: filepath.Join(scratch+".logs", fmt.Sprintf("hidden-%d.log", i+1))})
		if err != nil {
			return err
		}
		out.Hidden = append(out.Hidden, CheckOutcome{Command: cmd, CheckResult: r})
		if r.Exit != 0 || r.TimedOut {
			out.HiddenPassed = false
			break
		}
	}
	return nil
}

// planDoc is the plan an arm runs, written as JSON (which plan files may
// be).
type planDoc struct {
	Version           int                   `json:"version"`
	IntegrationBranch string                `json:"integration_branch"`
	MaxParallel       int                   `json:"max_parallel"`
	Agents            map[string]plan.Agent `json:"agents"`
	Tasks             []planTask            `json:"tasks"`
}

type planTask struct {
	ID            string         `json:"id"`
	Objective     string         `json:"objective"`
	Agent         string         `json:"agent"`
	Deps          []string       `json:"deps,omitempty"`
	WriteScope    []string       `json:"write_scope"`
	Checks        []string       `json:"checks,omitempty"`
	CheckTimeoutS float64        `json:"check_timeout_s"`
	EstimateS     float64        `json:"estimate_s"`
	Budget        map[string]any `json:"budget"`
}

// BuildPlan returns the plan of an arm. The single arm has one task,
// SingleTaskID, whose objective lists every task's prompt, whose write
// scope and checks are the union of theirs and whose budget is the whole
// budget; the swarm arm has the set's tasks, each with its share. Neither
// holds anything of the hidden checks. Agent profiles: "agent" for the
// work and for reconciliations, with APIARY_EVAL_ARM set.
func BuildPlan(ts *TaskSet, arm Arm, o Options) ([]byte, error) {
	prof := o.Agent
	prof.Env = maps.Clone(prof.Env)
	if prof.Env == nil {
		prof.Env = map[string]string{}
	}
	prof.Env["APIARY_EVAL_ARM"] = string(arm)
	doc := planDoc{Version: 1, IntegrationBranch: "main", Agents: map[string]plan.Agent{"agent": prof}}
	totalEst := 0.0
	for _, t := range ts.Tasks {
		totalEst += t.EstimateS
	}
	if arm == Single {
		var obj strings.Builder
		fmt.Fprintf(&obj, "Complete all %d of the following tasks in this repository, in any order that works.\n", len(ts.Tasks))
		var scope, checks []string
		wall := 0.0
		for i, t := range ts.Tasks {
			fmt.Fprintf(&obj, "\n## Task %d: %s\n\n%s\n", i+1, t.ID, strings.TrimSpace(t.PromptText))
			scope = append(scope, t.WriteScope...)
			checks = append(checks, t.Checks...)
			wall += t.WallClockS
		}
		slices.Sort(scope)
		doc.MaxParallel = 1
		doc.Tasks = []planTask{{ID: SingleTaskID, Objective: obj.String(), Agent: "agent", WriteScope: slices.Compact(scope),
			Checks: dedup(append(slices.Clone(ts.Checks), checks...)), CheckTimeoutS: ts.CheckTimeoutS, EstimateS: totalEst,
			Budget: map[string]any{"usd": o.BudgetUSD, "wall_clock_s": wall}}}
	} else {
		doc.MaxParallel = o.MaxParallel
		if doc.MaxParallel == 0 {
			doc.MaxParallel = ts.Swarm.MaxParallel
		}
		if doc.MaxParallel == 0 {
			doc.MaxParallel = len(ts.Tasks)
		}
		for _, t := range ts.Tasks {
			doc.Tasks = append(doc.Tasks, planTask{ID: t.ID, Objective: strings.TrimSpace(t.PromptText), Agent: "agent", Deps: t.Deps,
				WriteScope: t.WriteScope, Checks: dedup(append(slices.Clone(ts.Checks), t.Checks...)), CheckTimeoutS: ts.CheckTimeoutS,
				EstimateS: t.EstimateS, Budget: map[string]any{"usd": o.BudgetUSD * t.EstimateS / totalEst, "wall_clock_s": t.WallClockS}})
		}
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	if _, err := plan.Parse(string(arm)+"-plan.json", data); err != nil {
		return nil, fmt.Errorf("%w: the %s plan is invalid: %v", ErrTaskSet, arm, err)
	}
	return data, nil
}

func dedup(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// copyTree copies the directories, regular files (with their modes) and
// symbolic links under src into dst, creating it.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == ".git" && d.IsDir() {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&os.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			os.Remove(target)
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, info.Mode().Perm()|0o200)
		}
		return nil // sockets, devices: not part of a tree
	})
}
