package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/board/etcd/etcdproc"
	"github.com/apiary-dev/apiary/internal/plot"
	"github.com/apiary-dev/apiary/internal/swarm"
)

func benchSwarmCommand() *command {
	return &command{
		name:    "swarm",
		summary: "measure swarm claiming at scale: central scheduler vs self-organizing claims",
		help: `swarm drains --tasks simulated tasks (work uniform in [W/2, 3W/2) for --work W;
a tenth depend on an earlier task) with each --workers count of in-process
workers, in two modes: a central scheduler that assigns every task to workers
that heartbeat (--heartbeat), and self-organizing claims through shard
gatekeepers (--shards). Both take the board claim — a lease with a fencing
token — before working. It runs on the local board (SQLite, one client as in
one process) and on etcd (--etcd DSN, or a 3-member cluster it starts on
loopback from the etcd binary on PATH; one client per --host-size workers),
and reports the time to drain, claims per second, board messages per task
(requests sent plus watch events received, keep-alives included) and whether
every task was worked exactly once. --out DIR writes swarm-scale.md, .json and
the plots swarm-scale-drain and swarm-scale-messages as SVG and PNG. A run that
does not drain within --timeout is reported and skipped, and the command then
exits non-zero after writing the rest.`,
		setup: func(fs *flag.FlagSet) runFunc {
			workers := fs.String("workers", "16,32,64,128,256,512,1024", "comma-separated worker `COUNTS`")
			tasks := fs.Int("tasks", 4000, "`N` tasks per run")
			work := fs.Duration("work", 50*time.Millisecond, "mean simulated `WORK` per task")
			boards := fs.String("boards", "local,etcd", "comma-separated `BOARDS`: local, etcd")
			modes := fs.String("modes", "central,self", "comma-separated `MODES`: central, self")
			etcdDSN := fs.String("etcd", "", "etcd board `DSN` to use (default: start a 3-member loopback cluster)")
			hostSize := fs.Int("host-size", 64, "`N` workers per board client (a process) on etcd")
			shards := fs.Int("shards", 8, "`N` shards in self-organizing mode")
			heartbeat := fs.Duration("heartbeat", time.Second, "worker heartbeat `PERIOD` in central mode")
			timeout := fs.Duration("timeout", 15*time.Minute, "give up on one run after `D`")
			out := fs.String("out", "", "write the table, JSON and plots into `DIR`")
			asJSON := fs.Bool("json", false, "print the results as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				counts, err := parseCounts(*workers)
				if err != nil {
					return err
				}
				bs, ms := splitList(*boards), splitList(*modes)
				for _, b := range bs {
					if b != "local" && b != "etcd" {
						return usagef("--boards: unknown board %q", b)
					}
				}
				for _, m := range ms {
					if m != swarm.BenchCentral && m != swarm.BenchSelf {
						return usagef("--modes: unknown mode %q", m)
					}
				}
				if *tasks < 1 || *hostSize < 1 || *shards < 1 {
					return usagef("--tasks, --host-size and --shards must be positive")
				}
				tmp, err := os.MkdirTemp("", "apiary-bench-swarm-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				var results []swarmBenchRow
				failed := 0
				for _, b := range bs {
					fresh, shared, stop, err := benchBoard(ctx, e, b, *etcdDSN, tmp)
					if err != nil {
						return err
					}
					for _, n := range counts {
						for _, m := range ms {
							fmt.Fprintf(e.stderr, "bench swarm: %s board, %s, %d workers, %d tasks...\n", b, m, n, *tasks)
							res, err := swarm.Bench(ctx, swarm.BenchConfig{Mode: m, Workers: n, Tasks: *tasks, Work: *work,
								HostSize: *hostSize, Shards: *shards, Heartbeat: *heartbeat, Seed: uint64(n), Open: fresh(), Shared: shared, Timeout: *timeout})
							if err != nil {
								if ctx.Err() != nil {
									stop()
									return ctx.Err()
								}
								// One size that does not drain in time is a result
								// too: report it and measure the rest.
								fmt.Fprintf(e.stderr, "  did not drain: %v\n", err)
								failed++
								continue
							}
							results = append(results, swarmBenchRow{Board: b, BenchResult: *res})
							fmt.Fprintf(e.stderr, "  drain %.1fs, %.0f claims/s, %.1f messages/task, exactly once: %v\n", res.DrainS, res.ClaimsPerS, res.MessagesPerTask, res.ExactlyOnce)
							if ctx.Err() != nil {
								stop()
								return ctx.Err()
							}
						}
					}
					stop()
				}
				if *out != "" {
					if err := writeSwarmBench(*out, results, *tasks, *work); err != nil {
						return err
					}
				}
				if *asJSON {
					err = writeJSON(e.stdout, results)
				} else {
					err = swarmBenchTable(e.stdout, results)
				}
				if err == nil && failed > 0 {
					err = fmt.Errorf("bench swarm: %d runs did not drain within --timeout", failed)
				}
				return err
			}
		},
	}
}

// swarmBenchRow is one measured configuration.
type swarmBenchRow struct {
	Board string `json:"board"`
	swarm.BenchResult
}

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, usagef("--workers: bad count %q", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, usagef("--workers: no counts")
	}
	return out, nil
}

// benchBoard returns, for one board kind, a maker of fresh boards: each
// call returns how to open clients of a new, empty board — a local database
// (measured with one shared client, as one process would use it) or a new
// key prefix on etcd (a given cluster, or one started here).
func benchBoard(ctx context.Context, e *env, kind, etcdDSN, tmp string) (fresh func() func(context.Context) (swarm.BenchClient, error), shared bool, stop func(), err error) {
	var stores []*board.Store
	stop = func() {
		for _, s := range stores {
			s.Close()
		}
	}
	openDSN := func(dsn string) func(context.Context) (swarm.BenchClient, error) {
		return func(ctx context.Context) (swarm.BenchClient, error) {
			st, m, err := connect.OpenMetered(ctx, dsn, connect.Options{})
			if err != nil {
				return swarm.BenchClient{}, err
			}
			stores = append(stores, st)
			return swarm.BenchClient{Store: st, Counts: m.Counts}, nil
		}
	}
	runs := 0
	if kind == "local" {
		return func() func(context.Context) (swarm.BenchClient, error) {
			runs++
			return openDSN("local:" + filepath.Join(tmp, "local", strconv.Itoa(runs), "state.db"))
		}, true, stop, nil
	}
	dsn := etcdDSN
	if dsn == "" {
		if err := os.MkdirAll(filepath.Join(tmp, "etcd"), 0o755); err != nil {
			return nil, false, nil, err
		}
		cluster, err := etcdproc.Start(ctx, etcdproc.Options{Members: 3, Dir: filepath.Join(tmp, "etcd")})
		if err != nil {
			return nil, false, nil, fmt.Errorf("starting etcd (or pass --etcd DSN): %w", err)
		}
		eps := cluster.Endpoints()
		fmt.Fprintf(e.stderr, "bench swarm: started a 3-member etcd cluster at %s\n", strings.Join(eps, ","))
		dsn = "etcd://" + strings.Join(eps, ",")
		prev := stop
		stop = func() {
			prev()
			cluster.Stop()
		}
	}
	d, err := board.ParseDSN(dsn)
	if err != nil || d.Kind != board.KindEtcd {
		stop()
		return nil, false, nil, usagef("--etcd %q: want etcd://HOST:PORT[,...]", dsn)
	}
	base := d.Prefix
	return func() func(context.Context) (swarm.BenchClient, error) {
		runs++
		d.Prefix = base + fmt.Sprintf("apiary-bench-%d-%d/", time.Now().UnixNano(), runs)
		return openDSN(d.String())
	}, false, stop, nil
}

func swarmBenchTable(w io.Writer, rows []swarmBenchRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "board\tmode\tworkers\ttasks\tdrain (s)\tclaims/s\tmessages/task\twrites/task\texactly once\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.0f\t%.1f\t%.1f\t%v\t\n", r.Board, r.Mode, r.Workers, r.Tasks, r.DrainS, r.ClaimsPerS,
			r.MessagesPerTask, r.WritesPerTask, r.ExactlyOnce)
	}
	return tw.Flush()
}

// writeSwarmBench writes the table, JSON and plots into dir.
func writeSwarmBench(dir string, rows []swarmBenchRow, tasks int, work time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "swarm-scale.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "| board | mode | workers | drain (s) | claims/s | messages/task | writes/task | exactly once |\n|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&md, "| %s | %s | %d | %.1f | %.0f | %.1f | %.1f | %v |\n", r.Board, r.Mode, r.Workers, r.DrainS, r.ClaimsPerS, r.MessagesPerTask, r.WritesPerTask, r.ExactlyOnce)
	}
	if err := os.WriteFile(filepath.Join(dir, "swarm-scale.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	series := func(val func(swarmBenchRow) float64) []plot.Series {
		var out []plot.Series
		idx := map[string]int{}
		for _, r := range rows {
			name := r.Board + " " + r.Mode
			i, ok := idx[name]
			if !ok {
				i = len(out)
				idx[name] = i
				out = append(out, plot.Series{Name: name})
			}
			out[i].X = append(out[i].X, float64(r.Workers))
			out[i].Y = append(out[i].Y, val(r))
		}
		return out
	}
	charts := map[string]*plot.Chart{
		"swarm-scale-drain": {Title: fmt.Sprintf("Time to drain %d tasks (%v mean work)", tasks, work),
			X: plot.Axis{Label: "workers", Log: true}, Y: plot.Axis{Label: "drain (s)", Log: true},
			Series: series(func(r swarmBenchRow) float64 { return max(r.DrainS, 0.001) })},
		"swarm-scale-messages": {Title: "Board messages per task", X: plot.Axis{Label: "workers", Log: true},
			Y: plot.Axis{Label: "messages per task", Log: true}, Series: series(func(r swarmBenchRow) float64 { return max(r.MessagesPerTask, 0.001) })},
	}
	for name, c := range charts {
		svg, err := c.SVG()
		if err != nil {
			return err
		}
		png, err := c.PNG()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".svg"), svg, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			return err
		}
	}
	return nil
}
