package cli

import (
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
		name:    "worker",
		summary: "claim and work swarm tasks from a board",
		help: `A worker serves the swarm runs published on --board (apiary run PLAN --mode
swarm): it asks the shard gatekeepers for the ready tasks it is most competent
for (--skills against the task's tags, and its own record), takes the claim —
a lease with a fencing token — declares its intent, runs the task with agent
--profile in a worktree of the run's shared git remote at the integration head,
commits and gates the result and pushes it for the merge role. It also stands
for the shards' gatekeepers, which break silence (a ready task unclaimed for
5 s is offered to the best live worker; 2 s later anyone may take it) and put
back the tasks of workers that died; with --merge it also stands for the merge
role. Clones, worktrees and logs go under --workdir.

It runs until interrupted, or with --run RUN_ID until that run has finished.`,
		setup: func(fs *flag.FlagSet) runFunc {
			dsn := boardFlag(fs)
			skills := fs.String("skills", "", "comma-separated `SKILLS` matched against task tags (go,sql; * matches any)")
			profile := fs.String("profile", "", "agent `PROFILE` this worker runs tasks with: a built-in (claude, codex, gemini, aider) or one of the run's agents (required)")
			slots := fs.Int("slots", 1, "`N` tasks at once")
			id := fs.String("id", "", "worker `ID` (default HOST-PID)")
			run := fs.String("run", "", "serve only run `RUN_ID`, and exit when it has finished")
			workdir := fs.String("workdir", filepath.Join(".apiary", "worker"), "`DIR` for clones, worktrees and logs")
			merge := fs.Bool("merge", false, "also stand for the merge role")
			ttl := fs.Duration("ttl", 10*time.Second, "the worker's lease `TTL` (registry, requests, elections)")
			logLevel := fs.String("log-level", "info", "`LEVEL` of stderr logs: debug, info, warn, error")
			dash := fs.String("dash", "", "serve the dashboard's workers, claims and hints on `ADDR` (e.g. 127.0.0.1:7421)")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				switch {
				case *profile == "":
					return usagef("--profile is required")
				case *slots < 1:
					return usagef("--slots must be at least 1")
				case *ttl < time.Second:
					return usagef("--ttl must be at least 1s")
				case *run != "" && !rundir.ValidID(*run):
					return usagef("bad RUN_ID %q", *run)
				}
				level, err := parseLevel(*logLevel)
				if err != nil {
					return err
				}
				log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
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
					Exec:    &swarm.GitExecutor{Dir: dir, Store: st, Logger: log}, Load: cpuLoad()}
				if *merge {
					cfg.Merge = &swarm.MergeConfig{Dir: filepath.Join(dir, "merge")}
				}
				fmt.Fprintf(e.stdout, "worker %s on %s\n", wid, *dsn)
				return swarm.RunHost(ctx, cfg)
			}
		},
	}
}

// cpuLoad samples the machine's CPU use (0–1) from /proc/stat between calls;
// nil where /proc/stat is unavailable.
func cpuLoad() func() float64 {
	read := func() (busy, total uint64, ok bool) {
		b, err := os.ReadFile("/proc/stat")
		if err != nil {
			return 0, 0, false
		}
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		if len(f) < 5 || f[0] != "cpu" {
			return 0, 0, false
		}
		for i, v := range f[1:] {
			var n uint64
			fmt.Sscan(v, &n)
			total += n
			if i != 3 && i != 4 { // idle, iowait
				busy += n
			}
		}
		return busy, total, true
	}
	pb, pt, ok := read()
	if !ok {
		return nil
	}
	return func() float64 {
		b, t, ok := read()
		if !ok || t <= pt {
			return 0
		}
		load := float64(b-pb) / float64(t-pt)
		pb, pt = b, t
		return load
	}
}
