package cli

import (
	"context"
	"errors"
	"flag"
	"strconv"
	"time"

	"github.com/apiary-dev/apiary/internal/bench"
	"github.com/apiary-dev/apiary/internal/board/etcd/etcdproc"
)

func benchSwarmCommand() *command {
	return &command{
		Name:    "swarm",
		Summary: "measure swarm claiming at scale: central scheduler vs self-organizing claims",
		Help: `swarm drains --tasks simulated tasks (work uniform in [W/2, 3W/2) for --work W;
a tenth depend on an earlier task) with each --workers count of in-process
workers, in two modes: a central scheduler that claims every task for the
hosts that ask, and self-organizing claims through shard gatekeepers
(--shards), each host following only its shards. Both claim on the hosts'
session leases, a batch of tasks per transaction, and record each outcome
with the claim's end in one transaction. It runs on the local board (SQLite,
one client as in one process) and on etcd (--etcd DSN, or a 3-member cluster
it starts on loopback from the etcd binary on PATH; one client per
--host-size workers), and reports the time to drain, claims per second, board
messages per task (requests sent plus watch events received, keep-alives
included), board writes per task and whether every task was worked exactly
once. On etcd it also measures the cluster's own claim-transaction rate before
and after the runs (--capacity-levels; --no-capacity skips it) and reports each
run's claims per second as a fraction of the highest. --out DIR writes
swarm-scale.md, .json and the plots swarm-scale-drain, -messages and -writes as
SVG and PNG. A run that does not drain within --timeout is reported and
skipped, and the command then exits non-zero after writing the rest.`,
		Examples: []string{
			"apiary bench swarm --boards local --workers 16,64 --tasks 1000",
			"apiary bench swarm --out bench-swarm",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			workers := fs.String("workers", "16,32,64,128,256,512,1024", "comma-separated worker `COUNTS`")
			tasks := fs.Int("tasks", 4000, "`N` tasks per run")
			work := fs.Duration("work", 50*time.Millisecond, "mean simulated `WORK` per task")
			boards := fs.String("boards", "local,etcd", "comma-separated `BOARDS`: local, etcd")
			modes := fs.String("modes", "central,self", "comma-separated `MODES`: central, self")
			etcdDSN := fs.String("etcd", "", "etcd board `DSN` to use (default: start a 3-member loopback cluster)")
			hostSize := fs.Int("host-size", 64, "`N` workers per board client (a process) on etcd")
			shards := fs.Int("shards", 8, "`N` shards in self-organizing mode")
			prefetch := fs.Int("prefetch", 1, "`N` tasks each worker (self) or host (central) asks for beyond its free slots")
			levels := fs.String("capacity-levels", "1,16,64,256", "comma-separated `COUNTS` of transactions in flight for etcd's own rate")
			noCapacity := fs.Bool("no-capacity", false, "do not measure etcd's own transaction rate")
			timeout := fs.Duration("timeout", 15*time.Minute, "give up on one run after `D`")
			out := fs.String("out", "", "write the table, JSON and plots into `DIR`")
			asJSON := fs.Bool("json", false, "print the results as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				counts, err := parseCounts("--workers", *workers)
				if err != nil {
					return err
				}
				conc, err := parseCounts("--capacity-levels", *levels)
				if err != nil {
					return err
				}
				bs, ms := splitList(*boards), splitList(*modes)
				for _, b := range bs {
					if b != bench.BoardLocal && b != bench.BoardEtcd {
						return usagef("--boards: unknown board %q", b)
					}
				}
				for _, m := range ms {
					if m != bench.SwarmCentral && m != bench.SwarmSelf {
						return usagef("--modes: unknown mode %q", m)
					}
				}
				if *tasks < 1 || *hostSize < 1 || *shards < 1 || *prefetch < 0 {
					return usagef("--tasks, --host-size and --shards must be positive, --prefetch not negative")
				}
				rep, err := bench.Swarm(ctx, bench.SwarmConfig{Workers: counts, Tasks: *tasks, Work: *work, Boards: bs, Modes: ms,
					EtcdDSN: *etcdDSN, HostSize: *hostSize, Shards: *shards, Prefetch: *prefetch, Timeout: *timeout,
					NoCapacity: *noCapacity, Capacity: etcdproc.CapacityOptions{Concurrency: conc}, Progress: e.Stderr})
				if rep == nil || ctx.Err() != nil || (err != nil && !errors.Is(err, bench.ErrUndrained)) {
					return err // the cause, not a report of the runs that never happened
				}
				if *out != "" {
					if werr := rep.WriteFiles(*out); werr != nil {
						return werr
					}
				}
				var werr error
				if *asJSON {
					werr = writeJSON(e.Stdout, rep)
				} else {
					werr = rep.WriteTable(e.Stdout)
				}
				if werr != nil {
					return werr
				}
				return err // ErrUndrained, after the rest was written
			}
		},
	}
}

// parseCounts reads a flag's comma-separated positive counts.
func parseCounts(flagName, s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, usagef("%s: bad count %q", flagName, f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, usagef("%s: no counts", flagName)
	}
	return out, nil
}
