package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/proc"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// planFileInWorktree is where a planner writes its plan, inside its
// worktree (under .apiary, so it is never committed).
const planFileInWorktree = rundir.StateDir + "/out/plan.yaml"

// startPlanned is planner mode: the planner profile writes a plan for the
// goal in a scratch worktree whose only writable path is the plan file;
// the plan is validated, its errors handed back for one correction, and
// then it runs with the worker profile as the tasks' agent.
func startPlanned(ctx context.Context, s *settings, repo *git.Repo, id string, nr NewRun) (*Report, error) {
	profiles := map[string]agent.Profile{}
	for _, name := range []string{nr.Planner, nr.Worker} {
		if a, ok := nr.Agents[name]; ok {
			profiles[name] = s.profile(name, a)
		} else if _, ok := agent.Builtin(name); ok {
			profiles[name] = s.profile(name, plan.Agent{Kind: name, Builtin: true})
		} else {
			return nil, fmt.Errorf("%w: %q (planner mode needs --planner and --worker profiles)", ErrUnknownAgent, name)
		}
	}
	branch, err := repo.CurrentBranch(ctx)
	if err != nil {
		return nil, fmt.Errorf("planner mode integrates into the current branch: %w", err)
	}
	if dirty, err := repo.DirtyPaths(ctx); err != nil || len(dirty) > 0 {
		return nil, fmt.Errorf("%w: %v", plan.ErrDirtyTree, dirty)
	}
	head, err := repo.RevParse(ctx, "refs/heads/"+branch)
	if err != nil {
		return nil, err
	}
	trace, err := rundir.RandomHex(s.rnd, 16)
	if err != nil {
		return nil, err
	}
	rec := &rundir.Record{Version: 1, RunID: id, Created: s.now().UTC(), Repo: repo.Dir(), PlanFile: "plan.yaml",
		IntegrationBranch: branch, StartHead: head, TraceID: trace, Tasks: map[string]string{}, Goal: nr.Goal,
		Options: s.recordOptions(nr)}
	st := rundir.NewLog(rec.Repo, id, s.now, s.OnEvent)
	defer st.Close()
	if err := st.Lock(); err != nil {
		return nil, err
	}
	if err := savePlan(st, rec, nil); err != nil {
		return nil, err
	}
	procs, err := proc.New(proc.Options{Owner: id, Env: map[string]string{"APIARY_RUN_ID": id}, NoCgroup: s.ProcessGroups, Rand: s.rnd})
	if err != nil {
		return nil, err
	}
	defer procs.Close()
	if err := st.Emit(Event{Kind: rundir.EvRunStarted, Role: attempt.RolePlanner, Branch: branch, Base: head, Cgroup: procs.Dir()}); err != nil {
		return nil, err
	}
	pl := &planner{s: s, st: st, repo: repo, rec: rec, nr: nr, profile: profiles[nr.Planner], base: head, procs: procs}
	data, p, perr := pl.run(ctx)
	if perr != nil {
		if ctx.Err() == nil && errors.Is(perr, ErrPlanner) {
			_ = st.Emit(Event{Kind: rundir.EvRunFinished, Status: "failed", Reason: perr.Error()})
			return LoadReport(rec.Repo, id)
		}
		_ = st.Emit(Event{Kind: rundir.EvRunFinished, Status: "interrupted", Reason: perr.Error()})
		rep, _ := LoadReport(rec.Repo, id)
		return rep, perr
	}
	rec.Options.MaxParallel = max(rec.Options.MaxParallel, 0)
	if rec.Options.MaxParallel == 0 {
		rec.Options.MaxParallel = p.MaxParallel
	}
	if err := assignIDs(s, rec, p); err != nil {
		return nil, err
	}
	if err := savePlan(st, rec, data); err != nil {
		return nil, err
	}
	if err := st.Emit(Event{Kind: rundir.EvPlanned, Tasks: len(p.Tasks)}); err != nil {
		return nil, err
	}
	return launch(ctx, s, st, rec, p, repo, nil)
}

type planner struct {
	s       *settings
	st      *rundir.Log
	repo    *git.Repo
	rec     *rundir.Record
	nr      NewRun
	profile agent.Profile
	base    string
	id      string
	usage   envelope.Usage
	logs    []string
	procs   *proc.Tracker
}

// run makes up to two planner attempts and returns the accepted plan.
func (pl *planner) run(ctx context.Context) ([]byte, *plan.Plan, error) {
	dir := pl.st.Planner().Dir()
	var err error
	if pl.id, err = envelope.NewTaskID(pl.s.now(), pl.s.rnd); err != nil {
		return nil, nil, err
	}
	schema, _ := envelope.SchemaSource(envelope.SchemaPlan)
	schemaPath := filepath.Join(dir, "plan.schema.json")
	if err := rundir.WriteFile(schemaPath, schema); err != nil {
		return nil, nil, err
	}
	var prev []byte
	var problems string
	for n := 1; n <= 2; n++ {
		data, err := pl.attempt(ctx, n, schemaPath, prev, problems)
		if err != nil {
			return nil, nil, pl.fail(ctx, err)
		}
		p, perr := plan.ParseWith("plan.yaml", data, plan.Options{Agents: pl.nr.Agents})
		if perr == nil {
			_, perr = p.CheckRepo(ctx, pl.repo)
		}
		if perr == nil {
			rc := pl.receipt(envelope.StatusSucceeded, "")
			rc.Summary = fmt.Sprintf("plan accepted: %d tasks", len(p.Tasks))
			if err := pl.writeReceipt(rc); err != nil {
				return nil, nil, err
			}
			return data, p, nil
		}
		prev, problems = data, perr.Error()
	}
	return nil, nil, pl.fail(ctx, fmt.Errorf("%w: the plan is still invalid after one correction:\n%s", ErrPlanner, problems))
}

// fail writes the planner's failed receipt and returns err; when ctx
// ended there is no receipt (the run was interrupted, not failed).
func (pl *planner) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	rc := pl.receipt(envelope.StatusFailed, err.Error())
	if werr := pl.writeReceipt(rc); werr != nil {
		return werr
	}
	if !errors.Is(err, ErrPlanner) {
		return fmt.Errorf("%w: %w", ErrPlanner, err)
	}
	return err
}

func (pl *planner) writeReceipt(rc *envelope.Receipt) error {
	b, err := envelope.EncodeReceipt(rc)
	if err != nil {
		return err
	}
	return rundir.WriteFile(pl.st.Planner().ReceiptPath(), append(b, '\n'))
}

func (pl *planner) receipt(status envelope.Status, reason string) *envelope.Receipt {
	return &envelope.Receipt{TaskID: pl.id, RunID: pl.rec.RunID, Attempt: max(len(pl.logs), 1), Status: status,
		Reason: attempt.Clip(reason, 1024), Base: pl.base, Usage: pl.usage, Artifacts: pl.logs}
}

// attempt runs the planner once and returns the plan it wrote.
func (pl *planner) attempt(ctx context.Context, n int, schemaPath string, prev []byte, problems string) ([]byte, error) {
	dir := pl.st.Planner()
	wt := pl.st.Worktree(".planner", n, "")
	planPath := filepath.Join(wt, planFileInWorktree)
	trace, err := rundir.Traceparent(pl.rec.TraceID, pl.s.rnd)
	if err != nil {
		return nil, err
	}
	env := &envelope.Envelope{TaskID: pl.id, RunID: pl.rec.RunID, Trace: &envelope.Trace{Traceparent: trace},
		Objective: plannerObjective(pl.nr.Goal, pl.nr.Worker, problems),
		Inputs:    envelope.Inputs{Workspace: "git:" + pl.base},
		Authority: envelope.Authority{WriteScope: []string{planFileInWorktree}, Network: envelope.NetworkGateway},
		Agent:     envelope.AgentRef{Profile: pl.nr.Planner, Kind: pl.profile.Kind}}
	log := rundir.LogName(n)
	pl.logs = append(pl.logs, log)
	var data []byte
	spec := attempt.Spec{
		Repo: pl.repo, Worktree: wt, Base: pl.base, Lock: rundir.NewWorktreeLock(pl.repo.Dir()),
		Envelope: env, EnvelopeCopy: dir.AttemptEnvelopePath(n),
		Profile: pl.profile, Home: wt + ".home", Log: dir.Path(log), Grace: pl.s.AgentGrace,
		Prompt: env.Objective + "\n\nTask envelope: " + attempt.EnvelopeIn(wt) + "\nPlan schema: " + schemaPath + "\nWrite the plan to: " + planPath + "\n",
		Env: map[string]string{"APIARY_ROLE": attempt.RolePlanner, "APIARY_PLAN": planPath, "APIARY_PLAN_SCHEMA": schemaPath,
			"APIARY_GOAL": pl.nr.Goal, "APIARY_WORKER": pl.nr.Worker, "APIARY_PLAN_ERRORS": problems},
		Models: pl.s.Models, Ref: attempt.TaskRef{Run: pl.rec.RunID, TaskID: pl.id, Attempt: n, Role: attempt.RolePlanner},
		Logger: pl.s.log, Now: pl.s.now,
		Procs: pl.procs.With(".planner/"+strconv.Itoa(n)+"/"+attempt.RolePlanner, func(sc proc.Scope) {
			_ = pl.st.Emit(Event{Kind: rundir.EvProcessStarted, Role: attempt.RolePlanner, Attempt: n, Scope: sc.Marker,
				Pid: sc.Pgid, Cgroup: sc.Cgroup, StartTicks: sc.Start, Boot: sc.Boot})
		}),
		Hooks: attempt.Hooks{
			Provision: func(path, _ string) error {
				return pl.st.Emit(Event{Kind: rundir.EvWorktree, Role: attempt.RolePlanner, Attempt: n, Path: path})
			},
			Removed: func(path string) { _ = pl.st.Emit(Event{Kind: rundir.EvWorktreeRemoved, Path: path}) },
			Prepare: func(string) error {
				if err := os.MkdirAll(filepath.Dir(planPath), 0o755); err != nil {
					return err
				}
				if prev != nil {
					if err := rundir.WriteFile(planPath, prev); err != nil {
						return err
					}
				}
				return pl.st.Emit(Event{Kind: rundir.EvAttemptStarted, Role: attempt.RolePlanner, Attempt: n, Base: pl.base,
					Agent: pl.nr.Planner, Model: pl.profile.Model})
			},
			Collect: func(ctx context.Context, wt string) error {
				// A planner never implements: nothing but its plan file may change.
				st, err := pl.repo.At(wt).Status(ctx)
				if err != nil {
					return err
				}
				for _, e := range st {
					if e.Path != rundir.StateDir && !strings.HasPrefix(e.Path, rundir.StateDir+"/") {
						return fmt.Errorf("%w: the planner changed %s; a planner writes only its plan", ErrPlanner, e.Path)
					}
				}
				if data, err = rundir.ReadLimited(planPath, 16<<20); err != nil {
					return fmt.Errorf("%w: no plan at %s: %w", ErrPlanner, planFileInWorktree, err)
				}
				return nil
			},
		},
	}
	out, err := attempt.Run(ctx, spec)
	if out.Ran {
		pl.usage.Add(out.Usage)
		exit := out.Agent.Exit
		if eerr := pl.st.Emit(Event{Kind: rundir.EvAttemptFinished, Role: attempt.RolePlanner, Attempt: n, Exit: &exit, Usage: &out.Usage}); eerr != nil {
			return nil, eerr
		}
	}
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case out.Ran && out.Agent.Exit != 0:
		return nil, fmt.Errorf("%w: the planner exited with status %d", ErrPlanner, out.Agent.Exit)
	case err != nil:
		return nil, err
	}
	return data, nil
}

func plannerObjective(goal, worker, problems string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan this goal as an apiary plan; do not implement it.\n\nGoal: %s\n\n", goal)
	fmt.Fprintf(&b, "Write a plan file (YAML, version 1, see the plan schema) to $APIARY_PLAN: small tasks with disjoint write scopes where possible, deps between them, check commands and estimate_s. Every task's agent is %q (already defined). Change nothing else.\n", worker)
	if problems != "" {
		fmt.Fprintf(&b, "\nYour previous plan (still at $APIARY_PLAN) was rejected; fix these problems:\n%s\n", problems)
	}
	return b.String()
}
