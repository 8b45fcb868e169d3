// Package runs is apiary's runtime: it runs a plan — a DAG of typed task
// envelopes — with each task attempt in its own git worktree at a pinned
// base commit, checks every result with invariant gates it runs itself, and
// integrates accepted work into the integration branch with optimistic
// concurrency, so the branch is never broken and nobody's work is silently
// overwritten.
//
// # Scheduling
//
// A task is ready when its dependencies are satisfied: a data dependency
// must have succeeded (integrated), a control dependency only finished.
// Ready tasks start critical-path first (highest bottom level, see
// plan.BottomLevels; ties in plan order), at most MaxParallel attempts at
// once. An attempt's base is the integration head when it is dispatched,
// which holds the integrated work of every dependency. A failed data
// dependency skips its dependents.
//
// # Attempts
//
// An attempt (carried out by attempt.Run) gets worktree
// .apiary/worktrees/RUN/TASK-N on branch
// apiary/RUN/TASK, an envelope (references only: base commit, paths), its
// own model access with the task's budget, and a log. Whatever the agent
// leaves in the worktree (ignored files and .apiary/ excluded) is committed
// by apiary with the trailers Apiary-Task, Apiary-Run, Apiary-Agent,
// Apiary-Trace and Apiary-Attempt; the worktree is then removed. Envelopes
// the agent writes to .apiary/out/tasks/*.json become child tasks, validated
// (schema, depth, write scope within the parent's, budget carved from the
// parent's) and scheduled after the parent.
//
// # Integration
//
// Candidates are integrated in parallel, up to MaxParallelChecks at once
// when their changed paths are independent, and the ref moves one at a
// time, in the order their checks pass (see startIntegrations). The static
// gates (write scope, sealed paths, forbidden diff patterns on
// base..candidate) run first, in the attempt; then, with head the
// integration ref's value:
// head == base is a fast-forward; otherwise, when the paths the candidate
// changed are disjoint from those changed on the branch since base, git
// merge-tree makes a three-way merge committed with parents head and
// candidate; the check commands run on the tree being integrated in a
// scratch worktree; the ref moves only by compare-and-swap from head, and a
// CAS failure — or another integration landing while the checks run, which
// stops them — recomputes everything on the new head. A cancelled task's
// checks are killed, and the cancel state is checked again under the lock
// the ref update and every cancel take, so a cancelled task is never
// integrated after its cancel was acknowledged. Overlapping paths or a
// textual conflict start a reconciliation task (agent profile
// Config.ReconcileAgent, default the task's own) whose envelope names base,
// head, candidate and the conflict; its result goes through the same gates
// and is integrated as a merge of head and the original candidate
// ("reconciled"). If reconciliation fails, the task is re-run on the new
// head, up to MaxAttempts attempts. Every commit the integrator puts on the
// first-parent chain of the integration branch passed the task's checks and
// carries the trailers, plus Apiary-Integration for merges.
//
// # Processes
//
// Every agent and check runs in a scope of its own (package proc): a cgroup
// v2 where the machine allows, else a process group, marked in its
// environment with the run (APIARY_RUN_ID) and the scope (APIARY_SCOPE).
// Each scope is recorded (process_started) before it is waited for. When
// an agent exits it is reaped at once, and whatever it left gets SIGTERM,
// then SIGKILL after the grace period. A resume, and Reap for a run no
// process holds, end every process a dead one left — by the recorded
// scopes' cgroups and markers and the run's marker — before anything else.
//
// # On disk
//
// The truth is on disk under .apiary/runs/RUN/ (package rundir owns the
// layout and its readers): run.json, a copy of the plan
// (plan.yaml), events.jsonl (append-only), and per task
// tasks/NAME/{envelope.json, receipt.json, attempt-N.log, checks/,
// children/}. Files are written atomically: a temporary file in the same
// directory, fsync, rename, fsync of the directory. events.jsonl gets one write per line, so a killed process
// leaves whole lines (a torn last line is skipped), and is fsynced when the
// run ends. A process executing a run holds an flock on RUN/lock: a second
// process cannot resume it, and a report can tell a live run from a killed
// one. A task is done when its receipt exists and, if it succeeded, its
// commit is reachable from the integration ref. Resume rebuilds the queue from these files and the
// branch's trailers: a task integrated without a receipt gets its receipt,
// never a second integration; a task in flight is re-run after its stale
// worktree and branch (only those the events record) are removed; and
// when the resumed run ends, a checkout of the integration branch the
// killed one moved without bringing along is brought along (see
// checkout.go), as Reap does for a run nobody resumes.
package runs

import (
	"errors"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// Event is one line of a run's event log (see package rundir).
type Event = rundir.Event

// Sentinel errors; test with errors.Is.
var (
	// ErrNoRun: the run directory or its run.json does not exist.
	ErrNoRun = rundir.ErrNoRun
	// ErrBadRun: run.json or the stored plan is unreadable or inconsistent.
	ErrBadRun = rundir.ErrBadRun
	// ErrRunning: another process is executing the run.
	ErrRunning = rundir.ErrRunning
	// ErrConfig: a Config or NewRun field is missing or invalid.
	ErrConfig = errors.New("invalid configuration")
	// ErrUnknownAgent: a task names an agent profile the run cannot resolve.
	ErrUnknownAgent = attempt.ErrUnknownAgent
	// ErrChild is wrapped by every reason a child envelope is refused.
	ErrChild = errors.New("child task refused")
	// ErrStaleFence: a candidate carries an older fencing token than the
	// task's latest attempt; the integrator refuses it.
	ErrStaleFence = errors.New("stale fencing token")
	// ErrPlanner: planning failed (the planner's plan stayed invalid after
	// its one correction, or it changed files outside the plan file).
	ErrPlanner = errors.New("planner failed")
)
