package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
	"github.com/apiary-dev/apiary/internal/runview"
	"github.com/apiary-dev/apiary/internal/swarm"
)

func statusCommand() *command {
	return &command{
		Name:    "status",
		Args:    "[RUN_ID]",
		Summary: "report a run from its files on disk",
		Help: `Prints the report of run RUN_ID (default: the latest run) of the repository of
the current directory (or --repo), read only from .apiary/runs/RUN_ID: each
task's status, attempts, gate, commit, integration, tokens, dollars and wall
time, the totals, and the predicted and achieved critical paths. It works
while the run goes on (tasks without a receipt show as running or pending)
and after it ended or was killed. Dollars nothing measured (no run gateway,
and agents that report nothing) show as n/a, and as "known": false in JSON.

The swarm runs on the repository's local board (.apiary/state.db, when it
exists) are listed after the report, with their tasks by status; RUN_ID may
name one of them, for the board's report of it (as apiary board status
prints it). With --json and no local run, the latest swarm run's report.`,
		Examples: []string{
			"apiary status",
			"apiary status --json 20261202-003423-375598",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			asJSON := fs.Bool("json", false, "print the report as JSON")
			dir := fs.String("repo", ".", "the git repository, `DIR`")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 1 {
					return usagef("want at most one RUN_ID, got %d arguments", len(args))
				}
				root, err := git.New(*dir, git.Options{}).TopLevel(ctx)
				if err != nil {
					return repoError(*dir, err)
				}
				if len(args) == 1 {
					id := args[0]
					if !rundir.ValidID(id) {
						return usagef("bad RUN_ID %q", id)
					}
					return statusOf(ctx, e, root, id, *asJSON)
				}
				return statusLatest(ctx, e, root, *asJSON)
			}
		},
	}
}

// statusOf prints run id's report: the local run's, else the swarm run's
// on the repository's board.
func statusOf(ctx context.Context, e *env, root, id string, asJSON bool) error {
	rep, err := runs.LoadReport(root, id)
	if err == nil {
		return runs.WriteReport(e.Stdout, rep, asJSON)
	}
	if !errors.Is(err, runs.ErrNoRun) {
		return err
	}
	sw, err := runview.OpenSwarmRuns(ctx, root)
	if err != nil {
		return fmt.Errorf("no run %s in %s, and its board cannot be read: %w", id, root, err)
	}
	if sw != nil {
		defer sw.Close()
		srep, err := sw.Report(ctx, id)
		if err == nil {
			if asJSON {
				return writeJSON(e.Stdout, srep)
			}
			return srep.WriteText(e.Stdout)
		}
		if !errors.Is(err, swarm.ErrNoRun) {
			return fmt.Errorf("swarm run %s on %s: %w", id, sw.DSN, err)
		}
	}
	return fmt.Errorf("no run %s in %s", id, root)
}

// statusLatest prints the latest local run's report, then lists the swarm
// runs of the repository's board.
func statusLatest(ctx context.Context, e *env, root string, asJSON bool) error {
	ids, err := rundir.List(root)
	if err != nil {
		return err
	}
	var rep *runs.Report
	if len(ids) > 0 {
		if rep, err = runs.LoadReport(root, ids[len(ids)-1]); err != nil {
			return err
		}
		if asJSON {
			return runs.WriteReport(e.Stdout, rep, true)
		}
	}
	sw, swErr := runview.OpenSwarmRuns(ctx, root)
	var list []runview.SwarmRun
	if swErr == nil && sw != nil {
		defer sw.Close()
		list, swErr = sw.List(ctx)
	}
	if rep == nil {
		switch {
		case swErr != nil:
			return fmt.Errorf("no runs in %s, and its board cannot be read: %w", root, swErr)
		case len(list) == 0:
			return fmt.Errorf("no runs in %s", root)
		case asJSON:
			return writeJSON(e.Stdout, list[len(list)-1].Report)
		}
		return runview.WriteSwarmRuns(e.Stdout, sw.DSN, list)
	}
	if err := rep.WriteText(e.Stdout); err != nil {
		return err
	}
	if swErr != nil {
		fmt.Fprintf(e.Stderr, "apiary: the swarm runs of %s cannot be read: %v\n", root, swErr)
		return nil
	}
	if len(list) == 0 {
		return nil
	}
	fmt.Fprintln(e.Stdout)
	return runview.WriteSwarmRuns(e.Stdout, sw.DSN, list)
}
