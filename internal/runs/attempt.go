package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/proc"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// attemptState is everything one attemptState's goroutine needs. It shares nothing
// mutable with the scheduler.
type attemptState struct {
	run         string
	task        string
	taskID      string
	role        string
	n           int
	fence       uint64
	base        string          // the worktree's commit: the integration head at dispatch
	ctx         context.Context // the task's context
	tmpl        *envelope.Envelope
	profile     agent.Profile
	profileName string
	trace       string
	worktree    string
	branch      string
	envPath     string // the envelope's copy in the run directory
	logPath     string
	home        string
	// For a reconciliation: the task's candidate, its base and changes.
	origBase, origCandidate string
	origChanges             []git.Change

	stop    context.CancelCauseFunc // ends ctx (the attempt's own) with a cause
	lease   time.Duration           // its lease's TTL
	dynamic bool                    // of a spawned child
	spec    bool                    // speculative: checks run on its own candidate
	token   *capability.Token       // its capability
	lineage []string                // the token's lineage below the run
	budget  envelope.Budget         // what it may spend: its task's remaining budget
	pid     atomic.Int64            // the agent's process group, once started
}

// attemptResult is what an attempt's goroutine reports back.
type attemptResult struct {
	a           *attemptState
	interrupted bool  // the task's or run's context ended
	err         error // infrastructure failure
	exit        int
	signal      string
	timedOut    bool
	report      *agent.Report
	candidate   string // "" when nothing changed
	changes     []git.Change
	failures    []gate.Failure
	children    []childFile
	usage       envelope.Usage
	rc          *envelope.Reconcile
}

// runAttempt carries the attempt out (attempt.Run): worktree, envelope,
// model access, write surface, the agent, the commit and the static gates;
// it also collects the child envelopes a worker left and, for a
// speculative attempt, runs its checks on its own candidate.
//
// Its lease is renewed every heartbeat while the agent runs and is not
// stopped; after the agent exits the runtime holds it (Pin). An attempt
// whose lease lapsed while its agent was stopped and that still finishes
// (its agent ignored SIGTERM) is carried to the end like any other: it is
// the integrator that refuses its stale fencing token.
func (r *runner) runAttempt(a *attemptState) (res *attemptResult) {
	res = &attemptResult{a: a}
	ctx := a.ctx
	env := a.envelope()
	if a.role == attempt.RoleReconciler {
		rc, err := r.conflictOf(ctx, a)
		if err != nil {
			res.err = err
			res.interrupted = ctx.Err() != nil
			return res
		}
		env.Reconcile, res.rc = rc, rc
	}
	spec := attempt.Spec{
		Repo: r.repo, Worktree: a.worktree, Branch: a.branch, Base: a.base, Lock: r.wt,
		Envelope: env, EnvelopeCopy: a.envPath,
		Profile: a.profile, Prompt: prompt(env, a, attempt.EnvelopeIn(a.worktree)), Env: r.agentEnv(a, env),
		Home: a.home, Log: a.logPath, Grace: r.s.AgentGrace,
		Models: r.s.Models, Ref: attempt.TaskRef{Run: a.run, Task: a.task, TaskID: a.taskID, Attempt: a.n, Role: a.role, Capability: env.Authority.Capability},
		Writes: r.s.Writes, Grant: r.grant(a, env),
		Commit: &attempt.Commit{Subject: a.subject(), Trailers: a.trailers(""), Author: a.profileName},
		Gates:  true, Logger: r.s.log, Now: r.s.now,
		Procs: r.scopes(a.task, a.n, a.role),
	}
	if pool := r.worktreePool(); pool != nil {
		spec.Pool = pool
		if r.s.WorktreePool.Sparse {
			spec.Sparse = attempt.SparseCone(env)
		}
	}
	var stopBeat func()
	spec.Hooks = attempt.Hooks{
		Provision: func(path, branch string) error {
			return r.st.Emit(rundir.Event{Kind: rundir.EvWorktree, Task: a.task, Attempt: a.n, Role: a.role, Path: path, Branch: branch})
		},
		Removed: func(path string) {
			_ = r.st.Emit(rundir.Event{Kind: rundir.EvWorktreeRemoved, Task: a.task, Path: path})
		},
		Prepare: func(string) error {
			stopBeat = r.heartbeat(ctx, a)
			return nil
		},
		Started: func(pid int) {
			a.pid.Store(int64(pid))
			_ = r.st.Emit(rundir.Event{Kind: rundir.EvAgentStarted, Task: a.task, Attempt: a.n, Role: a.role, Pid: pid})
		},
		Exited: func() {
			stopBeat()
			_ = r.leases.Pin(a.task, a.fence) // the runtime holds it now; a stale one fails at the integrator
		},
		Late: func(ar agent.Result, err error) bool {
			// The agent outlived its lease and finished.
			return errors.Is(context.Cause(ctx), errLeaseLapsed) && err == nil && ar.Exit == 0 && r.runCtx.Err() == nil
		},
		Collect: func(_ context.Context, wt string) error {
			if a.role == attempt.RoleWorker {
				res.children = readChildren(rundir.State(wt, "out", "tasks"))
			}
			return nil
		},
	}
	out, err := attempt.Run(ctx, spec)
	res.interrupted = out.Interrupted
	res.err = err
	res.exit, res.signal, res.report = out.Agent.Exit, out.Agent.Signal, out.Agent.Report
	res.timedOut, res.usage = out.TimedOut, out.Usage
	res.candidate, res.changes, res.failures = out.Candidate, out.Changes, out.Failures
	if err != nil || out.Interrupted || out.Candidate == "" || len(out.Failures) > 0 {
		return res
	}
	if a.spec && len(env.Completion.Checks) > 0 {
		// A speculative attempt passes only with its checks: run them on its
		// own candidate now, so the first to pass can win.
		cctx := ctx
		if out.Late {
			var stop context.CancelFunc
			cctx, stop = context.WithTimeout(context.WithoutCancel(ctx), attempt.CleanupTimeout)
			defer stop()
		}
		crep, err := r.runChecks(cctx, a, a.base, out.Candidate, ".spec-check", env.Completion.Checks, env.Completion.CheckTimeoutS)
		if err != nil {
			res.err = fmt.Errorf("checks: %w", err)
			return res
		}
		res.failures = crep.Failures
	}
	return res
}

// subject is the first line of the attempt's commit message.
func (a *attemptState) subject() string {
	if a.role == attempt.RoleReconciler {
		return a.task + ": reconcile with the integration head"
	}
	return a.task + ": " + attempt.FirstLine(a.tmpl.Objective)
}

// removeWorktree removes a scratch worktree even after ctx ended.
func (r *runner) removeWorktree(ctx context.Context, task, path string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attempt.CleanupTimeout)
	defer cancel()
	if err := r.wt.Do(func() error { return r.repo.WorktreeRemove(cctx, path) }); err != nil {
		r.s.log.Warn("removing worktree", "task_id", task, "path", path, "err", err)
		return
	}
	_ = r.st.Emit(rundir.Event{Kind: rundir.EvWorktreeRemoved, Task: task, Path: path})
}

// trailers are the attempt's commit trailers; integration names the kind of
// an integrator's merge ("" for the task's own commit).
func (a *attemptState) trailers(integration string) []git.Trailer {
	ts := []git.Trailer{
		{Key: git.TrailerTask, Value: a.task},
		{Key: git.TrailerRun, Value: a.run},
		{Key: git.TrailerAgent, Value: a.profileName},
		{Key: git.TrailerTrace, Value: a.trace},
		{Key: attempt.TrailerAttempt, Value: strconv.Itoa(a.n)},
	}
	if integration != "" {
		ts = append(ts, git.Trailer{Key: attempt.TrailerIntegration, Value: integration})
	}
	return ts
}

// envelope is the attempt's envelope: the task's template with its base,
// trace, capability and budget.
func (a *attemptState) envelope() *envelope.Envelope {
	e := *a.tmpl
	e.TaskID, e.RunID, e.Name = a.taskID, a.run, a.task
	if a.token != nil {
		e.Authority.Capability = a.token.String()
	}
	if a.role == attempt.RoleWorker && a.n > 0 {
		e.Budget = a.budget
	}
	e.Inputs.Workspace = "git:" + a.base
	e.Trace = &envelope.Trace{Traceparent: a.trace}
	e.Agent = envelope.AgentRef{Profile: a.profileName, Kind: a.profile.Kind}
	return &e
}

// extraEnv is the APIARY_* environment beyond the agent package's own.
func (a *attemptState) extraEnv(e *envelope.Envelope) map[string]string {
	m := map[string]string{"APIARY_TASK": a.task, "APIARY_ATTEMPT": strconv.Itoa(a.n), "APIARY_ROLE": a.role}
	if rc := e.Reconcile; rc != nil {
		m["APIARY_RECONCILE_TASK"] = rc.Task
		m["APIARY_RECONCILE_BASE"] = rc.Base
		m["APIARY_RECONCILE_HEAD"] = rc.Head
		m["APIARY_RECONCILE_CANDIDATE"] = rc.Candidate
		m["APIARY_RECONCILE_PATHS"] = strings.Join(rc.Paths, "\n")
	}
	return m
}

// prompt tells the agent its task by reference: the envelope's path, the
// base commit, the paths. It never includes file contents.
func prompt(e *envelope.Envelope, a *attemptState, envPath string) string {
	var b strings.Builder
	if rc := e.Reconcile; rc != nil {
		fmt.Fprintf(&b, "Reconcile task %q with the integration branch.\n\n", rc.Task)
		fmt.Fprintf(&b, "Your working directory is a git worktree at the integration head %s. Task %q started from %s and produced commit %s (see `git diff %s %s`); the branch has changed since then in the same places:\n", rc.Head, rc.Task, rc.Base, rc.Candidate, rc.Base, rc.Candidate)
		for _, p := range rc.Paths {
			fmt.Fprintf(&b, "  - %s\n", p)
		}
		if rc.Conflict != "" {
			fmt.Fprintf(&b, "git merge-tree reports:\n%s\n", rc.Conflict)
		}
		fmt.Fprintf(&b, "\nApply the task's change on top of this tree so that both the branch's work and the task's intent hold. The task's objective was:\n%s\n", e.Objective)
	} else {
		fmt.Fprintf(&b, "%s\n\nYou are apiary task %q (attempt %d of run %s). Your working directory is a git worktree at base commit %s.\n", e.Objective, a.task, a.n, a.run, a.base)
	}
	b.WriteString(attempt.Brief(e, envPath, "your result"))
	if a.role == attempt.RoleWorker {
		b.WriteString("To hand off subtasks, write task envelopes (the envelope JSON schema) to .apiary/out/tasks/NAME.json.\n")
	}
	return b.String()
}

// conflictOf describes, for a reconciliation at a.base (the current head),
// how the task's candidate meets the branch: the overlapping paths and
// merge-tree's notices.
func (r *runner) conflictOf(ctx context.Context, a *attemptState) (*envelope.Reconcile, error) {
	theirs, err := r.repo.DiffNameStatus(ctx, a.origBase, a.base)
	if err != nil {
		return nil, err
	}
	paths := overlap(a.origChanges, theirs)
	mr, err := r.repo.MergeTree(ctx, a.base, a.origCandidate, git.MergeTreeOptions{})
	if err != nil {
		return nil, err
	}
	var msgs strings.Builder
	for _, m := range mr.Messages {
		fmt.Fprintf(&msgs, "%s: %s\n", m.Type, strings.TrimSpace(m.Text))
	}
	for _, p := range mr.Conflicts {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return &envelope.Reconcile{Task: a.task, Base: a.origBase, Head: a.base, Candidate: a.origCandidate,
		Paths: paths, Conflict: attempt.Clip(msgs.String(), 65536)}, nil
}

// overlap returns the paths changed on both sides, sorted.
func overlap(ours, theirs []git.Change) []string {
	set := make(map[string]bool, len(theirs))
	for _, c := range theirs {
		set[c.Path] = true
	}
	var out []string
	for _, c := range ours {
		if set[c.Path] {
			out = append(out, c.Path)
			delete(set, c.Path)
		}
	}
	slices.Sort(out)
	return out
}

// scopes is the tracker of one attempt's processes (role "worker",
// "reconciler", or a check's "check-0" and the like): every scope it starts
// is recorded in the events before it is waited for, so a later process
// can end what this one left.
func (r *runner) scopes(task string, n int, role string) *proc.Tracker {
	return r.procs.With(task+"/"+strconv.Itoa(n)+"/"+role, func(sc proc.Scope) {
		_ = r.st.Emit(rundir.Event{Kind: rundir.EvProcessStarted, Task: task, Attempt: n, Role: role, Scope: sc.Marker,
			Pid: sc.Pgid, Cgroup: sc.Cgroup, StartTicks: sc.Start, Boot: sc.Boot})
	})
}
