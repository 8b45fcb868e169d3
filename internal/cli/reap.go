package cli

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/runs"
	"github.com/apiary-dev/apiary/internal/swarm"
)

func reapCommand() *command {
	return &command{
		Name:    "reap",
		Summary: "remove what dead runs left behind (worktrees, branches, processes, sockets)",
		Help: `Removes what apiary's own records (each run's events) say it created for
runs no process is executing any more, once older than --grace: every
process of the run still alive — those of the scopes its events record (an
agent's or a check's: found by its cgroup, or by the scope's marker in the
process's environment, so a reused pid is never touched and a daemon that
left its process group is found too) and any other process carrying the
run's marker — and the run's cgroups; worktrees still registered under
.apiary/worktrees and the directories they leave; the run's branches
(apiary/RUN/..., a failed task's only after --keep-failed); control sockets;
and a checkout of the integration branch the run moved but did not bring
along (its index and files are brought to the branch); and empty
directories under .apiary/worktrees no record names, once empty for
--grace. Nothing apiary did not record or name for the run is looked at.
Every removal is logged (and appended to .apiary/reaper.log). A run does
the same at start and periodically; --dry-run only lists.

A local run pushes nothing, so the above touches only this repository.
Swarm runs' workers push their candidates to the run's shared remote
(refs/heads/apiary/RUN/...): with --board (default: the repository's local
board) or --remote, the candidate branches of the swarm runs the board
says have finished are deleted from the remote too, --grace after the run
ended — from each run's recorded remote, or from --remote only, the shared
remote as this machine reaches it. Branches of runs still active or not on
the board, and every branch outside refs/heads/apiary/, are never touched.`,
		Examples: []string{
			"apiary reap --dry-run",
			"apiary reap --grace 10m --keep-failed 24h",
			"apiary reap --board etcd://10.0.0.5:2379 --remote git@git.example.com:team/repo.git",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			repoDir := fs.String("repo", ".", "the git repository, `DIR`")
			dry := fs.Bool("dry-run", false, "list what would be removed, remove nothing")
			grace := fs.Duration("grace", time.Minute, "least age of what is removed")
			keepFailed := fs.Duration("keep-failed", runs.DefaultKeepFailed, "how long a failed task's branches are kept to look at")
			asJSON := fs.Bool("json", false, "print the removals as JSON")
			dsn := fs.String("board", "", "also delete finished swarm runs' candidate branches from their remotes, by the runs on board `DSN` (local:PATH or etcd://...)")
			remote := fs.String("remote", "", "with the swarm runs' branches, look at this remote `URL` only, as this machine reaches it (default: each run's recorded remote)")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				repo := git.New(*repoDir, git.Options{})
				root, err := repo.TopLevel(ctx)
				if err != nil {
					return repoError(*repoDir, err)
				}
				log := slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
				if *keepFailed <= 0 {
					return usagef("--keep-failed must be positive")
				}
				var st *board.Store
				if *dsn != "" || *remote != "" {
					if *dsn == "" {
						*dsn = "local:" + filepath.Join(root, board.DefaultLocalPath)
					}
					if st, err = openBoardReadOnly(ctx, *dsn); err != nil {
						return err
					}
					defer st.Close()
				}
				rep, err := runs.Reap(ctx, repo, runs.ReapOptions{DryRun: *dry, Grace: *grace, KeepFailed: *keepFailed, Logger: log})
				if st != nil {
					logRemoval, closeLog := runs.ReapLog(root, nil, log)
					defer closeLog()
					rrep, rerr := swarm.ReapRemote(ctx, swarm.RemoteReapConfig{Store: st, Repo: repo.At(root), Remote: *remote,
						Grace: *grace, DryRun: *dry, Log: logRemoval})
					rep.Removed, rep.Kept = append(rep.Removed, rrep.Removed...), append(rep.Kept, rrep.Kept...)
					err = errors.Join(err, rerr)
				}
				write := runs.WriteReapText
				if *asJSON {
					write = runs.WriteReapJSON
				}
				if werr := write(e.Stdout, rep); werr != nil {
					return werr
				}
				return err
			}
		},
	}
}
