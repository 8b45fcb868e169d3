package cli

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/swarm"
)

func workerCommand() *command {
	return &command{
		Name:    "worker",
		Summary: "claim and work swarm tasks from a board",
		Help: `A worker serves the swarm runs published on --board (apiary run PLAN --mode
swarm): it asks the shard gatekeepers for the ready tasks it is most competent
for (--skills against the task's tags, and its own record), takes the claim —
a lease with a fencing token — declares its intent, runs the task with agent
--profile in a worktree of the run's shared git remote at the integration head,
commits and gates the result and pushes it for the merge role. It also stands
for the shards' gatekeepers, which break silence (a ready task unclaimed for
5 s is offered to the best live worker; 2 s later anyone may take it) and put
back the tasks of workers that died; with --merge it also stands for the merge
role. Clones, worktrees and logs go under --workdir; an attempt's worktree
comes from a warm pool per run (--worktree-pool), reset to the task's base by
rewriting only the files that differ.

It runs until interrupted, or with --run RUN_ID until that run has finished.`,
		Examples: []string{
			"apiary worker --board etcd://10.0.0.5:2379 --profile claude --slots 2",
			"apiary worker --merge --run 20261202-003423-375598",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			dsn := boardFlag(fs)
			skills := fs.String("skills", "", "comma-separated `SKILLS` matched against task tags (go,sql; * matches any)")
			profile := fs.String("profile", "", "agent `PROFILE` this worker runs tasks with: a built-in (claude, codex, gemini, opencode, aider) or one of the run's agents (required)")
			slots := fs.Int("slots", 1, "`N` tasks at once")
			id := fs.String("id", "", "worker `ID` (default HOST-PID)")
			run := fs.String("run", "", "serve only run `RUN_ID`, and exit when it has finished")
			workdir := fs.String("workdir", filepath.Join(".apiary", "worker"), "`DIR` for clones, worktrees and logs")
			merge := fs.Bool("merge", false, "also stand for the merge role")
			var mf mergeFlags
			addMergeFlags(fs, &mf, "with --merge: ")
			ttl := fs.Duration("ttl", 10*time.Second, "the worker's lease `TTL` (registry, requests, elections)")
			logLevel := fs.String("log-level", "info", "`LEVEL` of stderr logs: debug, info, warn, error")
			dash := fs.String("dash", "", "serve the dashboard's workers, claims and hints on `ADDR` (e.g. 127.0.0.1:7421)")
			poolSize := fs.Int("worktree-pool", 0, "keep `N` idle worktrees per run for attempts to reuse (default: --slots; -1: a new worktree for each)")
			poolIdle := fs.Duration("worktree-max-idle", 0, "remove a pooled worktree idle longer than `D` (default: keep it until the worker stops)")
			sparse := fs.Bool("sparse", false, "check out only the directories of a task's inputs and write scope, for tasks that list their inputs")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				switch {
				case *profile == "":
					return usagef("--profile is required")
				case *poolIdle < 0:
					return usagef("--worktree-max-idle must not be negative")
				case *slots < 1:
					return usagef("--slots must be at least 1")
				case *ttl < time.Second:
					return usagef("--ttl must be at least 1s")
				case *run != "" && !rundir.ValidID(*run):
					return usagef("bad RUN_ID %q", *run)
				}
				var policy swarm.MergeOptions
				if *merge {
					var err error
					if policy, err = mf.options(); err != nil {
						return err
					}
				} else if set := mf.set(); len(set) > 0 {
					return usagef("%s: the merge role's policy applies only with --merge", strings.Join(set, ", "))
				}
				level, err := parseLevel(*logLevel)
				if err != nil {
					return err
				}
				log := slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: level}))
				st, err := openBoard(ctx, *dsn)
				if err != nil {
					return err
				}
				defer st.Close()
				stopDash, err := workerDash(ctx, e, *dash, st)
				if err != nil {
					return err
				}
				defer stopDash()
				wid := *id
				if wid == "" {
					host, _ := os.Hostname()
					wid = fmt.Sprintf("%s-%d", host, os.Getpid())
				}
				dir, err := filepath.Abs(*workdir)
				if err != nil {
					return err
				}
				var sk []string
				for _, s := range strings.Split(*skills, ",") {
					if s = strings.TrimSpace(s); s != "" {
						sk = append(sk, s)
					}
				}
				cfg := swarm.HostConfig{Store: st, Host: wid, Run: *run, UntilFinished: *run != "", TTL: *ttl, Logger: log,
					Workers: []swarm.WorkerSpec{{ID: wid, Skills: sk, Profile: *profile, Slots: *slots}},
					Exec: &swarm.GitExecutor{Dir: dir, Store: st, Logger: log,
						Pool: swarm.PoolConfig{Off: *poolSize < 0, Size: cmp.Or(max(*poolSize, 0), *slots), MaxIdle: *poolIdle, Sparse: *sparse}},
					Load: swarm.CPULoad()}
				if *merge {
					cfg.Merge = &swarm.MergeConfig{Dir: filepath.Join(dir, "merge"), Policy: policy}
				}
				fmt.Fprintf(e.Stdout, "worker %s on %s\n", wid, *dsn)
				return swarm.RunHost(ctx, cfg)
			}
		},
	}
}
