package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runview"
	"github.com/apiary-dev/apiary/internal/sim"
)

func simCommand() *command {
	return &command{
		Name:    "sim",
		Summary: "answer how many agents before spending: scaling, voting, fan-out, collisions, swarms",
		Help: `Analytical models for sizing a swarm, a discrete-event simulator of swarms
(swarm) and its calibration against real runs (calibrate). Each prints a
short human summary, or JSON with --json.`,
		Examples: []string{
			"apiary sim usl --f 0.95 --sigma 0.02 --kappa 0.0005 --t1 100 --m 16",
			"apiary sim swarm --agents 16,32,64 --tasks 1000",
		},
		Subs: []*command{simUSLCommand(), simVoteCommand(), simBarrierCommand(), simQuorumCommand(), simCollisionCommand(),
			simHedgeCommand(), simSwarmCommand(), simCalibrateCommand()},
	}
}

// required returns a usage error naming the first flag of names that was not
// given on the command line.
func required(fs *flag.FlagSet, names ...string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, n := range names {
		if !set[n] {
			return usagef("missing --%s", n)
		}
	}
	return nil
}

// simErr turns a model's parameter error into a usage error naming the
// flag, and a sim.UsageError into a usage error.
func simErr(err error) error {
	var pe *sim.ParamError
	var ue *sim.UsageError
	switch {
	case errors.As(err, &pe):
		return usagef("--%s must be %s, got %s", pe.Param, pe.Want, pe.Value)
	case errors.As(err, &ue):
		return usagef("%v", ue)
	}
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func simUSLCommand() *command {
	return &command{
		Name:    "usl",
		Summary: "speedup and time with M workers under the universal scalability law",
		Help: `Evaluates speedup(M) = 1/((1-f) + f/M + sigma(M-1) + kappa*M(M-1)), the time
T_M = T1/speedup(M), the model's M* = sqrt((f-sigma)/kappa), and the worker count
where speedup actually peaks.

With --fit FILE, fits f, sigma, kappa and T1 by least squares (f in [0, 1],
sigma and kappa >= 0) to measurements, one "M seconds" row per line ('#'
starts a comment), then evaluates the fitted law at --m (default: the largest
measured M). FILE "-" reads standard input.`,
		Examples: []string{
			"apiary sim usl --f 0.95 --sigma 0.02 --kappa 0.0005 --t1 100 --m 16",
			"apiary sim usl --fit measurements.txt",
			"apiary sim usl --fit measurements.txt --m 32 --json",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			f := fs.Float64("f", 0, "parallelisable fraction of the work, in [0, 1]")
			sigma := fs.Float64("sigma", 0, "contention cost per extra worker (>= 0)")
			kappa := fs.Float64("kappa", 0, "crosstalk cost per pair of workers (>= 0)")
			t1 := fs.Float64("t1", 0, "time with one worker, in `seconds`")
			m := fs.Float64("m", 0, "number of workers to evaluate")
			fit := fs.String("fit", "", "fit the law to measurements in `file` (rows \"M seconds\")")
			asJSON := fs.Bool("json", false, "print a JSON object")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				var r sim.USLReport
				var err error
				if *fit != "" {
					set := map[string]bool{}
					fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
					for _, n := range []string{"f", "sigma", "kappa", "t1"} {
						if set[n] {
							return usagef("--%s cannot be combined with --fit", n)
						}
					}
					var pts []sim.Point
					if pts, err = sim.ReadPoints(*fit, e.Stdin); err != nil {
						return err
					}
					if !set["m"] {
						*m = sim.MaxM(pts)
					}
					r, err = sim.AnalyzeFit(pts, *m)
				} else {
					if err := required(fs, "f", "sigma", "kappa", "t1", "m"); err != nil {
						return err
					}
					r, err = sim.USL{F: *f, Sigma: *sigma, Kappa: *kappa}.Analyze(*t1, *m)
				}
				if err != nil {
					return simErr(err)
				}
				if *asJSON {
					return writeJSON(e.Stdout, r)
				}
				return r.WriteText(e.Stdout)
			}
		},
	}
}

func simVoteCommand() *command {
	return &command{
		Name:    "vote",
		Summary: "how often M voting agents fail, independent vs correlated",
		Help: `M voters (reviewers, judges, replicas) are each wrong with probability p.
Prints the probability that a majority (more than M/2; a tie is not a
majority) and that all of them are wrong, when errors are independent and when
any two voters' errors have correlation rho (beta-binomial model).`,
		Examples: []string{
			"apiary sim vote --m 5 --p 0.2 --rho 0.3",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			m := fs.Int("m", 0, "number of voters")
			p := fs.Float64("p", 0, "probability that one voter is wrong, in [0, 1]")
			rho := fs.Float64("rho", 0, "pairwise correlation of errors, in [0, 1]")
			asJSON := fs.Bool("json", false, "print a JSON object")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				if err := required(fs, "m", "p", "rho"); err != nil {
					return err
				}
				r, err := sim.Vote(*m, *p, *rho)
				if err != nil {
					return simErr(err)
				}
				if *asJSON {
					return writeJSON(e.Stdout, r)
				}
				return r.WriteText(e.Stdout)
			}
		},
	}
}

func simBarrierCommand() *command {
	return &command{
		Name:    "barrier",
		Summary: "probability that all N parallel tasks finish by one task's f-quantile",
		Help: `A barrier waits for all N independent tasks. Prints the probability that all
of them finish by the time a single task finishes with probability f: f^N.`,
		Examples: []string{
			"apiary sim barrier --n 10 --f 0.9",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			n := fs.Int("n", 0, "number of parallel tasks")
			f := fs.Float64("f", 0, "quantile of one task's duration, in [0, 1]")
			asJSON := fs.Bool("json", false, "print a JSON object")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				if err := required(fs, "n", "f"); err != nil {
					return err
				}
				r, err := sim.Barrier(*n, *f)
				if err != nil {
					return simErr(err)
				}
				if *asJSON {
					return writeJSON(e.Stdout, r)
				}
				_, err = fmt.Fprintf(e.Stdout, "P(all %d done by their %g-quantile) = %.4g\n", r.N, r.F, r.P)
				return err
			}
		},
	}
}

func simQuorumCommand() *command {
	return &command{
		Name:    "quorum",
		Summary: "probability that K of N parallel tasks finish by one task's f-quantile",
		Help: `A quorum continues once K of N independent tasks are done. Prints the
probability that at least K finish by the time a single task finishes with
probability f.`,
		Examples: []string{
			"apiary sim quorum --n 10 --k 8 --f 0.9",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			n := fs.Int("n", 0, "number of parallel tasks")
			k := fs.Int("k", 0, "number of tasks needed")
			f := fs.Float64("f", 0, "quantile of one task's duration, in [0, 1]")
			asJSON := fs.Bool("json", false, "print a JSON object")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				if err := required(fs, "n", "k", "f"); err != nil {
					return err
				}
				r, err := sim.Quorum(*n, *k, *f)
				if err != nil {
					return simErr(err)
				}
				if *asJSON {
					return writeJSON(e.Stdout, r)
				}
				_, err = fmt.Fprintf(e.Stdout, "P(at least %d of %d done by their %g-quantile) = %.4g\n", r.K, r.N, r.F, r.P)
				return err
			}
		},
	}
}

func simCollisionCommand() *command {
	return &command{
		Name:    "collision",
		Summary: "probability that N workers' write sets do not overlap",
		Help: `N workers each write W distinct files out of FILES. Prints the probability
that no file is written by two workers. With files chosen uniformly it is
computed exactly, and the closed form exp(-N(N-1)W^2/(2 FILES)) is shown as an
approximation. With --zipf S, file popularity follows Zipf's law with exponent
S (the file of rank r is drawn with weight r^-S) and the probability is
estimated by seeded Monte Carlo.`,
		Examples: []string{
			"apiary sim collision --n 8 --files 500 --w 3",
			"apiary sim collision --n 8 --files 500 --w 3 --zipf 1.1",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			n := fs.Int("n", 0, "number of workers")
			w := fs.Int("w", 0, "files written by each worker")
			files := fs.Int("files", 0, "number of files in the repository")
			zipf := fs.Float64("zipf", 0, "Zipf exponent of file popularity (enables Monte Carlo)")
			trials := fs.Int("trials", 10000, "Monte Carlo trials")
			seed := fs.Uint64("seed", 1, "Monte Carlo random seed")
			asJSON := fs.Bool("json", false, "print a JSON object")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				if err := required(fs, "n", "w", "files"); err != nil {
					return err
				}
				zipfSet := false
				fs.Visit(func(f *flag.Flag) { zipfSet = zipfSet || f.Name == "zipf" })
				var r sim.CollisionReport
				var err error
				if zipfSet {
					rng := rand.New(rand.NewPCG(*seed, 0x61706961727973))
					r, err = sim.CollisionZipf(rng, *n, *w, *files, *zipf, *trials)
					r.Seed = seed
				} else {
					r, err = sim.CollisionUniform(*n, *w, *files)
				}
				if err != nil {
					return simErr(err)
				}
				if *asJSON {
					return writeJSON(e.Stdout, r)
				}
				return r.WriteText(e.Stdout)
			}
		},
	}
}

func simSwarmCommand() *command {
	return &command{
		Name:    "swarm",
		Summary: "simulate N agents on T tasks: a central scheduler vs self-organizing claims",
		Help: `A discrete-event simulation (a binary-heap event queue; deterministic for a
seed) of --tasks tasks with lognormal durations run by each --agents count,
coordinated by a central scheduler, by self-organizing claims, or both:

  central  one scheduler handles every message one at a time — requests,
           completions, assignments and every agent's heartbeat (1,000
           agents at one per 5 s is 200 msg/s) — and stalls when saturated
  self     agents claim ready tasks from a board; a claim goes to the
           task's shard gatekeeper, which grants the best claim of a short
           window; losers pick again (negotiation messages per claim)

Both pay merge conflicts (tasks write Zipf-distributed files; a task whose
files changed since its base reworks), duplicate work (a helper written
again by an agent that cannot see the existing one: there is no shared
utility index in self mode unless --utility-index), and failing tests (the
pass rate falls with every interface change since an attempt's base).

Per agent count and mode it prints the makespan (and its ratio to
max(critical path, work/agents)), completed tasks and effective work,
conflicts, duplicates, test failures, messages (heartbeats included) and
the coordination share of tokens; --json prints it all. --out DIR writes
the charts as SVG and PNG: swarm-makespan, swarm-messages,
swarm-coordination, swarm-waste, swarm-efficiency.

--agents takes a list; "..." continues a progression: 16,32,...,1024.
--params FILE starts from the parameters of a JSON file (such as the
output of 'apiary sim calibrate --json'); flags given override it. A
calibration's per-message costs were fitted to benchmarks simulated as
coordination alone, and its overhead to replays of measured task times: when
this simulation departs from those settings (merges and tests back on, say),
a warning on stderr (and "warnings" in --json) names each setting and the
flags that simulate as fitted.`,
		Examples: []string{
			"apiary sim swarm --agents 16,32,64 --tasks 1000",
			"apiary sim swarm --mode self --shards 8 --out plots",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			p := sim.DefaultSwarmParams()
			p.RegisterFlags(fs)
			agents := fs.String("agents", "16,32,...,1024", "agent `COUNTS`: a comma-separated list; \"...\" continues a progression")
			mode := fs.String("mode", "both", "coordination `MODE`: central, self or both")
			out := fs.String("out", "", "write the charts (SVG and PNG) to `DIR`")
			params := fs.String("params", "", "start from the parameters in JSON `FILE`")
			asJSON := fs.Bool("json", false, "print the results as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				var conds []sim.FitCondition
				if *params != "" {
					set := map[string]string{}
					fs.Visit(func(f *flag.Flag) { set[f.Name] = f.Value.String() })
					var err error
					if p, conds, err = sim.ReadParamsFile(*params, p); err != nil {
						return err
					}
					for name, v := range set {
						if err := fs.Set(name, v); err != nil {
							return err
						}
					}
				}
				// A calibration's values mean what they were fitted under:
				// say so when this simulation departs from it.
				warnings := sim.Warnings(*params, conds, p)
				for _, w := range warnings {
					fmt.Fprintf(e.Stderr, "apiary sim swarm: warning: %s\n", w)
				}
				counts, err := sim.ParseAgents(*agents)
				if err != nil {
					return simErr(err)
				}
				modes, err := sim.ParseModes(*mode)
				if err != nil {
					return simErr(err)
				}
				rep, err := sim.SweepSwarm(p, counts, modes)
				if err != nil {
					return simErr(err)
				}
				rep.Warnings = warnings
				if *out != "" {
					if err := writeCharts(*out, "swarm-", rep.Charts()); err != nil {
						return err
					}
				}
				if *asJSON {
					return writeJSON(e.Stdout, rep)
				}
				if err := rep.WriteText(e.Stdout); err != nil {
					return err
				}
				if *out != "" {
					fmt.Fprintf(e.Stdout, "charts: %s\n", filepath.Join(*out, "swarm-*.{svg,png}"))
				}
				return nil
			}
		},
	}
}

// writeCharts writes each chart as DIR/PREFIX+NAME.svg and .png, each file
// atomically (a temporary file renamed into place).
func writeCharts(dir, prefix string, charts []sim.NamedChart) error {
	return sim.WriteCharts(dir, prefix, charts, rundir.WriteFileUnsynced)
}

func simCalibrateCommand() *command {
	return &command{
		Name:    "calibrate",
		Args:    "REPORT...",
		Summary: "fit the swarm simulator to measured runs and benchmarks",
		Help: `Fits the parameters of 'apiary sim swarm' to measured runs and prints, for
each measurement, the measured and the simulated makespan and the error.

A REPORT is a run directory (.apiary/runs/RUN_ID: its report, its
max_parallel and its plan's dependencies are read from disk), a file
holding the JSON of 'apiary run --json', 'apiary status --json' or 'apiary
demo --json', or a swarm benchmark report: a JSON array of rows (or an
object with "results" or "rows") giving agents (or workers), mode (central
or self), tasks and the time to drain (makespan_s, drain_s, time_to_drain_s
or wall_s; _ms and _ns variants; time_to_drain in nanoseconds), optionally
work_median_s and work_p90_s. 'apiary sim swarm --json' output is one too.
"-" reads one report from standard input.

Task durations (median, p90) and the pass rate come from the runs' tasks;
the per-attempt overhead from replaying each run's tasks on its agents;
the central scheduler's and the gatekeepers' time per message, the message
latency (and the work's median when the benchmark does not state it) from
the benchmark rows, simulated as coordination alone (no merges, no
tests). --json prints the fitted parameters in the form --params of 'apiary
sim swarm' reads.`,
		Examples: []string{
			"apiary sim calibrate .apiary/runs/20261202-003423-375598",
			"apiary run --json plan.yaml | apiary sim calibrate --json -",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			asJSON := fs.Bool("json", false, "print the calibration as JSON")
			params := fs.String("params", "", "start from the parameters in JSON `FILE` (default: the simulator's defaults)")
			seed := fs.Uint64("seed", 1, "random `seed` of the simulations")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 0 {
					return usagef("want one or more REPORT files or run directories")
				}
				base := sim.DefaultSwarmParams()
				if *params != "" {
					data, err := os.ReadFile(*params)
					if err != nil {
						return err
					}
					if base, err = sim.ParseParams(data, base); err != nil {
						return fmt.Errorf("%s: %w", *params, err)
					}
				}
				base.Seed = *seed
				var ms []sim.Measurement
				for _, a := range args {
					m, err := sim.ReadReport(a, e.Stdin, runview.SimReport)
					if err != nil {
						return err
					}
					ms = append(ms, m...)
				}
				c, err := sim.Calibrate(ms, base)
				if err != nil {
					return simErr(err)
				}
				if *asJSON {
					return writeJSON(e.Stdout, c)
				}
				return c.WriteText(e.Stdout)
			}
		},
	}
}
