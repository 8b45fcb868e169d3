// Package rundir is the on-disk form of apiary's runs: the layout of
// .apiary/ at a repository's root, run ids, the run record (run.json), the
// event log (events.jsonl), per-task envelopes and receipts, and the
// atomic file writes every one of them goes through.
//
// The layout under the repository root:
//
//	.apiary/.gitignore              ignores all of .apiary
//	.apiary/runs/RUN/run.json       the run record (Record)
//	.apiary/runs/RUN/plan.yaml      the plan the run started with
//	.apiary/runs/RUN/events.jsonl   the event log, one Event per line
//	.apiary/runs/RUN/lock           flocked while a process executes RUN
//	.apiary/runs/RUN/tasks/NAME/    envelope.json, receipt.json,
//	                                attempt-N.log, checks/, children/
//	.apiary/runs/RUN/planner/       the planner's envelopes, logs, receipt
//	.apiary/worktrees/RUN/NAME-N    attempts' worktrees
//	.apiary/worktrees.lock          serializes git's worktree list
//
// Writers use Log (the event log and the run lock) and the Write*
// functions; readers use Open and the methods of Run and Task, so that no
// other package spells a path of this layout.
//
// Files are written atomically: a temporary file in the same directory,
// fsync, rename, fsync of the directory. events.jsonl gets one write per
// line, so a killed process leaves whole lines; readers skip a torn last
// line.
package rundir

import "errors"

// Sentinel errors; test with errors.Is.
var (
	// ErrNoRun: the run directory or its run.json does not exist.
	ErrNoRun = errors.New("no such run")
	// ErrBadRun: run.json, a receipt or the stored plan is unreadable or
	// inconsistent.
	ErrBadRun = errors.New("corrupt run state")
	// ErrRunning: another process is executing the run.
	ErrRunning = errors.New("the run is in progress in another process")
)
