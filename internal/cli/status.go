package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

func statusCommand() *command {
	return &command{
		name:    "status",
		args:    "[RUN_ID]",
		summary: "report a run from its files on disk",
		help: `Prints the report of run RUN_ID (default: the latest run) of the repository of
the current directory (or --repo), read only from .apiary/runs/RUN_ID: each
task's status, attempts, gate, commit, integration, tokens, dollars and wall
time, the totals, and the predicted and achieved critical paths. It works
while the run goes on (tasks without a receipt show as running or pending)
and after it ended or was killed.`,
		setup: func(fs *flag.FlagSet) runFunc {
			asJSON := fs.Bool("json", false, "print the report as JSON")
			dir := fs.String("repo", ".", "the git repository, `DIR`")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 1 {
					return usagef("want at most one RUN_ID, got %d arguments", len(args))
				}
				root, err := git.New(*dir, git.Options{}).TopLevel(ctx)
				if err != nil {
					return fmt.Errorf("%s is not in a git repository: %w", *dir, err)
				}
				id := ""
				if len(args) == 1 {
					id = args[0]
					if !rundir.ValidID(id) {
						return usagef("bad RUN_ID %q", id)
					}
				} else {
					runs, err := rundir.List(root)
					if err != nil {
						return err
					}
					if len(runs) == 0 {
						return fmt.Errorf("no runs in %s", root)
					}
					id = runs[len(runs)-1]
				}
				rep, err := runs.LoadReport(root, id)
				if errors.Is(err, runs.ErrNoRun) {
					return fmt.Errorf("no run %s in %s", id, root)
				}
				if err != nil {
					return err
				}
				return writeReport(e.stdout, rep, *asJSON)
			}
		},
	}
}
