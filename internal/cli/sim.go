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
	"strings"

	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
	"github.com/apiary-dev/apiary/internal/sim"
)

func simCommand() *command {
	return &command{
		name:    "sim",
		summary: "answer how many agents before spending: scaling, voting, fan-out, collisions, swarms",
		help: `Analytical models for sizing a swarm, a discrete-event simulator of swarms
(swarm) and its calibration against real runs (calibrate). Each prints a
short human summary, or JSON with --json.`,
		subs: []*command{simUSLCommand(), simVoteCommand(), simBarrierCommand(), simQuorumCommand(), simCollisionCommand(),
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

// simErr turns a model's parameter error into a usage error naming the flag.
func simErr(err error) error {
	var pe *sim.ParamError
	if errors.As(err, &pe) {
		return usagef("--%s must be %s, got %s", pe.Param, pe.Want, pe.Value)
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
		name:    "usl",
		summary: "speedup and time with M workers under the universal scalability law",
		help: `Evaluates speedup(M) = 1/((1-f) + f/M + sigma(M-1) + kappa*M(M-1)), the time
T_M = T1/speedup(M), the model's M* = sqrt((f-sigma)/kappa), and the worker count
where speedup actually peaks.

With --fit FILE, fits f, sigma, kappa and T1 by least squares (f in [0, 1],
sigma and kappa >= 0) to measurements, one "M seconds" row per line ('#'
starts a comment), then evaluates the fitted law at --m (default: the largest
measured M). FILE "-" reads standard input.`,
		setup: func(fs *flag.FlagSet) runFunc {
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
				var u sim.USL
				var stats *sim.FitStats
				if *fit != "" {
					set := map[string]bool{}
					fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
					for _, n := range []string{"f", "sigma", "kappa", "t1"} {
						if set[n] {
							return usagef("--%s cannot be combined with --fit", n)
						}
					}
					pts, err := readPoints(e, *fit)
					if err != nil {
						return err
					}
					var st sim.FitStats
					if u, *t1, st, err = sim.FitUSL(pts); err != nil {
						return err
					}
					stats = &st
					if !set["m"] {
						for _, p := range pts {
							*m = max(*m, p.M)
						}
					}
				} else {
					if err := required(fs, "f", "sigma", "kappa", "t1", "m"); err != nil {
						return err
					}
					u = sim.USL{F: *f, Sigma: *sigma, Kappa: *kappa}
				}
				r, err := u.Analyze(*t1, *m)
				if err != nil {
					return simErr(err)
				}
				r.Fit = stats
				if *asJSON {
					return writeJSON(e.stdout, r)
				}
				return r.WriteText(e.stdout)
			}
		},
	}
}

func readPoints(e *env, name string) ([]sim.Point, error) {
	if name == "-" {
		return sim.ParsePoints(e.stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pts, err := sim.ParsePoints(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return pts, nil
}

func simVoteCommand() *command {
	return &command{
		name:    "vote",
		summary: "how often M voting agents fail, independent vs correlated",
		help: `M voters (reviewers, judges, replicas) are each wrong with probability p.
Prints the probability that a majority (more than M/2; a tie is not a
majority) and that all of them are wrong, when errors are independent and when
any two voters' errors have correlation rho (beta-binomial model).`,
		setup: func(fs *flag.FlagSet) runFunc {
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
					return writeJSON(e.stdout, r)
				}
				_, err = fmt.Fprintf(e.stdout, "%d voters, each wrong with p %g, pairwise correlation rho %g\n"+
					"                independent  correlated\n"+
					"majority wrong  %11s  %10s\n"+
					"all wrong       %11s  %10s\n",
					r.M, r.P, r.Rho, sim.Pct(r.MajorityFailIndep), sim.Pct(r.MajorityFailCorr), sim.Pct(r.UnanimousFailIndep), sim.Pct(r.UnanimousFailCorr))
				return err
			}
		},
	}
}

func simBarrierCommand() *command {
	return &command{
		name:    "barrier",
		summary: "probability that all N parallel tasks finish by one task's f-quantile",
		help: `A barrier waits for all N independent tasks. Prints the probability that all
of them finish by the time a single task finishes with probability f: f^N.`,
		setup: func(fs *flag.FlagSet) runFunc {
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
					return writeJSON(e.stdout, r)
				}
				_, err = fmt.Fprintf(e.stdout, "P(all %d done by their %g-quantile) = %.4g\n", r.N, r.F, r.P)
				return err
			}
		},
	}
}

func simQuorumCommand() *command {
	return &command{
		name:    "quorum",
		summary: "probability that K of N parallel tasks finish by one task's f-quantile",
		help: `A quorum continues once K of N independent tasks are done. Prints the
probability that at least K finish by the time a single task finishes with
probability f.`,
		setup: func(fs *flag.FlagSet) runFunc {
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
					return writeJSON(e.stdout, r)
				}
				_, err = fmt.Fprintf(e.stdout, "P(at least %d of %d done by their %g-quantile) = %.4g\n", r.K, r.N, r.F, r.P)
				return err
			}
		},
	}
}

func simCollisionCommand() *command {
	return &command{
		name:    "collision",
		summary: "probability that N workers' write sets do not overlap",
		help: `N workers each write W distinct files out of FILES. Prints the probability
that no file is written by two workers. With files chosen uniformly it is
computed exactly, and the closed form exp(-N(N-1)W^2/(2 FILES)) is shown as an
approximation. With --zipf S, file popularity follows Zipf's law with exponent
S (the file of rank r is drawn with weight r^-S) and the probability is
estimated by seeded Monte Carlo.`,
		setup: func(fs *flag.FlagSet) runFunc {
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
					return writeJSON(e.stdout, r)
				}
				var b strings.Builder
				if zipfSet {
					fmt.Fprintf(&b, "%d workers x %d files each, %d files, zipf s %g\n", r.N, r.W, r.Files, *r.Zipf)
					fmt.Fprintf(&b, "P(no shared file) ~ %.4f +- %.4f (Monte Carlo, %d trials, seed %d)\n", r.PNoCollision, *r.StdErr, r.Trials, *r.Seed)
				} else {
					fmt.Fprintf(&b, "%d workers x %d files each, %d files, uniform\n", r.N, r.W, r.Files)
					fmt.Fprintf(&b, "P(no shared file) = %.4g (exact)\n", r.PNoCollision)
					fmt.Fprintf(&b, "closed form exp(-N(N-1)W^2/(2 FILES)) = %.4g (approximation)\n", *r.PApprox)
				}
				_, err = io.WriteString(e.stdout, b.String())
				return err
			}
		},
	}
}

func simSwarmCommand() *command {
	return &command{
		name:    "swarm",
		summary: "simulate N agents on T tasks: a central scheduler vs self-organizing claims",
		help: `A discrete-event simulation (a binary-heap event queue; deterministic for a
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
		setup: func(fs *flag.FlagSet) runFunc {
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
					data, err := os.ReadFile(*params)
					if err != nil {
						return err
					}
					if p, conds, err = sim.ParseParamsFile(data, p); err != nil {
						return fmt.Errorf("%s: %w", *params, err)
					}
					for name, v := range set {
						if err := fs.Set(name, v); err != nil {
							return err
						}
					}
				}
				// A calibration's values mean what they were fitted under:
				// say so when this simulation departs from it.
				var warnings []string
				for _, c := range conds {
					if w := c.Warning(p); w != "" {
						warnings = append(warnings, *params+": "+w)
						fmt.Fprintf(e.stderr, "apiary sim swarm: warning: %s: %s\n", *params, w)
					}
				}
				counts, err := sim.ParseAgents(*agents)
				if err != nil {
					return simErr(err)
				}
				var modes []sim.Mode
				switch *mode {
				case "central", "self":
					modes = []sim.Mode{sim.Mode(*mode)}
				case "both":
					modes = []sim.Mode{sim.ModeCentral, sim.ModeSelf}
				default:
					return usagef("--mode must be central, self or both, got %q", *mode)
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
					return writeJSON(e.stdout, rep)
				}
				if err := rep.WriteText(e.stdout); err != nil {
					return err
				}
				if *out != "" {
					fmt.Fprintf(e.stdout, "charts: %s\n", filepath.Join(*out, "swarm-*.{svg,png}"))
				}
				return nil
			}
		},
	}
}

// writeCharts writes each chart as DIR/PREFIX+NAME.svg and .png, each file
// atomically (a temporary file renamed into place).
func writeCharts(dir, prefix string, charts []sim.NamedChart) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range charts {
		svg, err := c.Chart.SVG()
		if err != nil {
			return fmt.Errorf("chart %s: %w", c.Name, err)
		}
		png, err := c.Chart.PNG()
		if err != nil {
			return fmt.Errorf("chart %s: %w", c.Name, err)
		}
		for ext, data := range map[string][]byte{".svg": svg, ".png": png} {
			if err := rundir.WriteFileUnsynced(filepath.Join(dir, prefix+c.Name+ext), data); err != nil {
				return err
			}
		}
	}
	return nil
}

func simCalibrateCommand() *command {
	return &command{
		name:    "calibrate",
		args:    "REPORT...",
		summary: "fit the swarm simulator to measured runs and benchmarks",
		help: `Fits the parameters of 'apiary sim swarm' to measured runs and prints, for
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
		setup: func(fs *flag.FlagSet) runFunc {
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
					m, err := readCalibrationReport(a, e.stdin)
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
					return writeJSON(e.stdout, c)
				}
				return c.WriteText(e.stdout)
			}
		},
	}
}

// readCalibrationReport reads one REPORT argument of sim calibrate.
func readCalibrationReport(path string, stdin io.Reader) ([]sim.Measurement, error) {
	if path == "-" {
		data, err := io.ReadAll(io.LimitReader(stdin, 64<<20+1))
		if err != nil {
			return nil, err
		}
		return sim.ParseReport("stdin", data)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return sim.ParseReport(path, data)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	id, runsDir := filepath.Base(abs), filepath.Dir(abs)
	if filepath.Base(runsDir) != "runs" || filepath.Base(filepath.Dir(runsDir)) != rundir.StateDir {
		return nil, fmt.Errorf("%s: a directory REPORT must be a run directory, %s/runs/RUN_ID", path, rundir.StateDir)
	}
	root := filepath.Dir(filepath.Dir(runsDir))
	rep, err := runs.LoadReport(root, id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rec, err := rundir.Open(root, id).Record()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	deps := map[string][]string{}
	if data, err := os.ReadFile(filepath.Join(abs, "plan.yaml")); err == nil {
		if pl, err := plan.Parse("plan.yaml", data); err == nil {
			for _, t := range pl.Tasks {
				for _, d := range t.Deps {
					deps[t.ID] = append(deps[t.ID], d.Task)
				}
			}
		}
	}
	// The report as `apiary status --json` prints it, plus what the
	// simulator needs from run.json and the plan.
	type task struct {
		runs.TaskReport
		Deps []string `json:"deps,omitempty"`
	}
	doc := struct {
		*runs.Report
		Tasks       []task `json:"tasks"`
		MaxParallel int    `json:"max_parallel"`
	}{Report: rep, MaxParallel: rec.Options.MaxParallel}
	for _, t := range rep.Tasks {
		doc.Tasks = append(doc.Tasks, task{TaskReport: t, Deps: deps[t.ID]})
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return sim.ParseReport(path, data)
}
