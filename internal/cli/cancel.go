package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

func cancelCommand() *command {
	return &command{
		name:    "cancel",
		args:    "RUN_ID [TASK]",
		summary: "cancel a run, or one task and everything it spawned",
		help: `Cancels TASK of run RUN_ID and its whole subtree (the children it spawned,
theirs, ...), or the whole run without TASK. It works on a run executed by
another process: the request goes through the run's control socket under
.apiary/runs/RUN_ID, authorized by an operator token minted with the
repository's key (.apiary/cap.key).

Every agent of the subtree gets SIGTERM, then SIGKILL after the grace
period; its gateway requests are aborted, its worktree removed, its
capability revoked, and its receipt says "cancelled" with --reason. The
command returns when every cancelled task has its receipt and prints how
long that took.

A run no process is executing cannot be reached; the cancellation is
recorded in its directory and applied if the run is resumed.`,
		setup: func(fs *flag.FlagSet) runFunc {
			reason := fs.String("reason", "", "why, for the receipts (default \"cancelled by the operator\")")
			repoDir := fs.String("repo", ".", "the git repository, `DIR`")
			asJSON := fs.Bool("json", false, "print the result as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) < 1 || len(args) > 2 {
					return usagef("want RUN_ID [TASK]")
				}
				task := ""
				if len(args) == 2 {
					task = args[1]
				}
				return runCancel(ctx, e, *repoDir, args[0], task, *reason, *asJSON)
			}
		},
	}
}

func runCancel(ctx context.Context, e *env, repoDir, run, task, reason string, asJSON bool) error {
	if !rundir.ValidID(run) {
		return usagef("bad run id %q", run)
	}
	root, err := git.New(repoDir, git.Options{}).TopLevel(ctx)
	if err != nil {
		return fmt.Errorf("%s is not in a git repository: %w", repoDir, err)
	}
	if _, err := rundir.Open(root, run).Record(); err != nil {
		return err
	}
	key, err := runs.LoadKey(root, false, nil)
	if err != nil {
		return fmt.Errorf("the repository's capability key: %w", err)
	}
	tok, err := runs.OperatorToken(key, run, time.Now(), time.Minute)
	if err != nil {
		return err
	}
	ctl := runs.DialControl(runs.ControlPath(root, run))
	res, err := ctl.Cancel(ctx, runs.CancelRequest{Operator: tok.String(), Task: task, Reason: reason})
	if errors.Is(err, runs.ErrNotLive) {
		if err := runs.RecordCancel(root, run, task, reason, time.Now()); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "run %s is not running; the cancellation is recorded and applies if it is resumed\n", run)
		return nil
	}
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	what := "run " + run
	if task != "" {
		what = "task " + task
	}
	fmt.Fprintf(e.stdout, "cancelled %s: %d task(s) [%s], acknowledged in %.1f ms\n", what, len(res.Cancelled), strings.Join(res.Cancelled, " "), res.AckMs)
	return nil
}
