package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/runs"
	"github.com/apiary-dev/apiary/internal/supervise"
)

func reapCommand() *command {
	return &command{
		name:    "reap",
		summary: "remove what dead runs left behind (worktrees, branches, processes, sockets)",
		help: `Removes what apiary's own records (each run's events) say it created for
runs no process is executing any more, once older than --grace: agent
process groups still alive (only those carrying the run's marker in their
environment, so a reused pid is never touched), worktrees still registered
under .apiary/worktrees, the branches of tasks that did not fail, and
control sockets. Nothing apiary did not record is looked at. Every removal
is logged (and appended to .apiary/reaper.log). A run does the same at
start and periodically; --dry-run only lists.`,
		setup: func(fs *flag.FlagSet) runFunc {
			repoDir := fs.String("repo", ".", "the git repository, `DIR`")
			dry := fs.Bool("dry-run", false, "list what would be removed, remove nothing")
			grace := fs.Duration("grace", time.Minute, "least age of what is removed")
			asJSON := fs.Bool("json", false, "print the removals as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				repo := git.New(*repoDir, git.Options{})
				log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
				rep, err := runs.Reap(ctx, repo, runs.ReapOptions{DryRun: *dry, Grace: *grace, Logger: log})
				if *asJSON {
					type line struct {
						Kind   string `json:"kind"`
						ID     string `json:"id"`
						Run    string `json:"run"`
						DryRun bool   `json:"dry_run"`
						Error  string `json:"error,omitempty"`
					}
					out := []line{}
					for _, r := range rep.Removed {
						l := line{Kind: string(r.Item.Kind), ID: r.Item.ID, Run: r.Item.Owner, DryRun: r.DryRun}
						if r.Err != nil {
							l.Error = r.Err.Error()
						}
						out = append(out, l)
					}
					enc := json.NewEncoder(e.stdout)
					enc.SetIndent("", "  ")
					if werr := enc.Encode(out); werr != nil {
						return werr
					}
					return err
				}
				for _, r := range rep.Removed {
					verb := "removed"
					switch {
					case r.DryRun:
						verb = "would remove"
					case r.Err != nil:
						verb = "failed to remove"
					}
					fmt.Fprintf(e.stdout, "%s %s %s (run %s)%s\n", verb, r.Item.Kind, r.Item.ID, r.Item.Owner, errSuffix(r))
				}
				if len(rep.Removed) == 0 {
					fmt.Fprintln(e.stdout, "nothing to reap")
				}
				return err
			}
		},
	}
}

func errSuffix(r supervise.Removal) string {
	if r.Err == nil {
		return ""
	}
	return ": " + r.Err.Error()
}
