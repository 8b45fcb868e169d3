package cli

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

func cancelCommand() *command {
	return &command{
		Name:    "cancel",
		Args:    "RUN_ID [TASK]",
		Summary: "cancel a run, or one task and everything it spawned",
		Help: `Cancels TASK of run RUN_ID and its whole subtree (the children it spawned,
theirs, ...), or the whole run without TASK. It works on a run executed by
another process: the request goes through the run's control socket under
.apiary/runs/RUN_ID, authorized by an operator token minted with the
repository's key (.apiary/cap.key).

Every agent of the subtree gets SIGTERM, then SIGKILL after the grace
period; every check running for it is killed and its pending integration
dropped — a candidate whose checks passed is not integrated once the cancel
is in; its gateway requests are aborted, its worktree removed, its
capability revoked, and its receipt says "cancelled" with --reason. The
command returns when every task reached has its receipt and no process of
theirs is left, and prints how long that took; after --wait it reports
what is still going instead.

The exit status is 0 only when everything reached was cancelled. It is 1
for an unknown run or task, a task or run that had already finished (its
work integrated), or a subtree still going after --wait.

A run no process is executing cannot be reached; the cancellation is
recorded in its directory and applied if the run is resumed (a finished
run has nothing to cancel).`,
		Examples: []string{
			"apiary cancel 20261202-003423-375598",
			"apiary cancel --reason \"wrong approach\" 20261202-003423-375598 parser",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			reason := fs.String("reason", "", "why, for the receipts (default \"cancelled by the operator\")")
			repoDir := fs.String("repo", ".", "the git repository, `DIR`")
			asJSON := fs.Bool("json", false, "print the result as JSON")
			wait := fs.Duration("wait", time.Minute, "how long to wait for the subtree to be gone, `DURATION`")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) < 1 || len(args) > 2 {
					return usagef("want RUN_ID [TASK]")
				}
				if *wait <= 0 {
					return usagef("--wait must be positive")
				}
				task := ""
				if len(args) == 2 {
					task = args[1]
				}
				return runCancel(ctx, e, *repoDir, args[0], task, *reason, *wait, *asJSON)
			}
		},
	}
}

func runCancel(ctx context.Context, e *env, repoDir, run, task, reason string, wait time.Duration, asJSON bool) error {
	if !rundir.ValidID(run) {
		return usagef("bad run id %q", run)
	}
	root, err := git.New(repoDir, git.Options{}).TopLevel(ctx)
	if err != nil {
		return repoError(repoDir, err)
	}
	res, idle, err := runs.CancelAsOperator(ctx, root, run, task, reason, wait, time.Now())
	if err != nil {
		return err
	}
	if idle {
		fmt.Fprintf(e.Stdout, "run %s is not running; the cancellation is recorded and applies if it is resumed\n", run)
		return nil
	}
	if asJSON {
		if err := writeJSON(e.Stdout, res); err != nil {
			return err
		}
	} else {
		what := "run " + run
		if task != "" {
			what = "task " + task
		}
		res.WriteText(e.Stdout, what, wait)
	}
	if !res.Complete() {
		return errSilent
	}
	return nil
}
