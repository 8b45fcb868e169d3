package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/sim"
)

func planCommand() *command {
	return &command{
		Name:    "plan",
		Summary: "validate and analyse plan files",
		Help: `A plan file (YAML or JSON, schema in docs/schema/plan.json) lists agent
profiles and a DAG of tasks: each with an objective, an agent, dependencies,
a write scope, sealed paths, check commands, forbidden diff patterns, a
budget and an estimate. These commands check a plan and predict what
running it in parallel can gain, without running anything.`,
		Examples: []string{
			"apiary plan validate plan.yaml",
			"apiary plan analyze --workers 4 plan.yaml",
		},
		Subs: []*command{planValidateCommand(), planAnalyzeCommand()},
	}
}

func planValidateCommand() *command {
	return &command{
		Name:    "validate",
		Args:    "PLAN",
		Summary: "check a plan file against the schema and the DAG rules",
		Help: `Checks PLAN ("-" reads stdin) against the plan schema and the rules a schema
cannot express: unique task ids matching [a-z0-9-]{1,64}, known dependencies
and agents, no dependency cycle, write scopes and sealed paths inside the
repository. With --repo it also checks the repository side: the integration
branch exists (by default, the current branch) and no tracked file has
uncommitted changes.

Every problem is printed on stderr as FILE:LINE:COL: FIELD: MESSAGE and the
exit status is 1; a valid plan prints a one-line summary.`,
		Examples: []string{
			"apiary plan validate plan.yaml",
			"apiary plan validate --repo . plan.yaml",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			repo := fs.String("repo", "", "also check the git repository in `DIR`")
			return func(ctx context.Context, e *env, args []string) error {
				if err := exactArgs(args, 1, "PLAN"); err != nil {
					return err
				}
				p, err := loadPlan(e, args[0])
				if err != nil {
					return err
				}
				branch := ""
				if *repo != "" {
					if branch, err = p.CheckRepo(ctx, git.New(*repo, git.Options{})); err != nil {
						return reportPlanErrors(e, err)
					}
				}
				fmt.Fprintln(e.Stdout, p.Summary(branch))
				return nil
			}
		},
	}
}

func planAnalyzeCommand() *command {
	return &command{
		Name:    "analyze",
		Args:    "PLAN",
		Summary: "predict work, critical path, makespan and speedup of a plan",
		Help: `Analyses PLAN ("-" reads stdin) from the tasks' estimate_s (60 s when absent):

  work          the sum of the estimates: the time of one worker
  critical path the longest dependency chain, the least time with any workers
  width         the most tasks that can run at once as far as the
                dependencies go: a maximum antichain, the largest set of tasks
                none of which depends, directly or not, on another (Dilworth:
                the fewest chains of dependent tasks covering the plan); exact
                up to 40000 tasks, the level width above
  level width   the most tasks on one level (level = longest chain of
                dependencies before a task), at most the width
  makespan      a list schedule on P workers that always starts the ready task
                with the longest remaining chain (critical-path-first)
  speedup       work / makespan, next to the work-span bound min(P, work/cp)
                and Amdahl's bound with the serial fraction of the plan

--json prints the same as an object with work_s, critical_path,
critical_path_s, width, antichain, level_width, makespan_s, speedup and
more.

With --p90-ratio R the estimates spread: each attempt of a task takes a
lognormal time with median estimate_s and p90 R x estimate_s (and, with
--straggler-prob, straggles --straggler-factor times as long). It then adds
the time to each speculative task's result under its policy (quorum; hedge
after hedge_after_s, or at the p90 for a task that names only a
hedge_agent), computed exactly as 'apiary sim hedge' does, and the
makespan's percentiles over --trials Monte Carlo draws of every duration,
with each task run once and with the plan's policies (JSON: "tail").`,
		Examples: []string{
			"apiary plan analyze plan.yaml",
			"apiary plan analyze --workers 4 --schedule plan.yaml",
			"apiary plan analyze --p90-ratio 2 --straggler-prob 0.05 --json plan.yaml",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			workers := fs.Int("workers", 0, "schedule on `P` workers (default: the plan's max_parallel)")
			asJSON := fs.Bool("json", false, "print the analysis as a JSON object")
			schedule := fs.Bool("schedule", false, "include each task's worker, start and finish")
			ratio := fs.Float64("p90-ratio", 0, "estimates spread: a task's p90 is `R` times its estimate_s, R > 1")
			stragglerProb := fs.Float64("straggler-prob", 0, "with --p90-ratio: probability that an attempt straggles")
			stragglerFactor := fs.Float64("straggler-factor", 5, "with --p90-ratio: a straggler takes this many `times` as long")
			trials := fs.Int("trials", 1000, "with --p90-ratio: Monte Carlo draws of the makespan")
			seed := fs.Uint64("seed", 1, "with --p90-ratio: Monte Carlo random seed")
			return func(ctx context.Context, e *env, args []string) error {
				if err := exactArgs(args, 1, "PLAN"); err != nil {
					return err
				}
				if *workers < 0 {
					return usagef("--workers must be positive, got %d", *workers)
				}
				p, err := loadPlan(e, args[0])
				if err != nil {
					return err
				}
				set := map[string]bool{}
				fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
				if !set["p90-ratio"] {
					for _, name := range []string{"straggler-prob", "straggler-factor", "trials", "seed"} {
						if set[name] {
							return usagef("--%s needs --p90-ratio", name)
						}
					}
				}
				a := p.Analyze(*workers)
				if !*schedule {
					a.Schedule = nil
				}
				var tail *sim.PlanTail
				if set["p90-ratio"] {
					tp := sim.PlanTailParams{Workers: *workers, P90Ratio: *ratio, StragglerProb: *stragglerProb,
						StragglerFactor: *stragglerFactor, Trials: *trials, Seed: *seed}
					if len(p.Tasks)**trials > 2_000_000 {
						tp.Progress = func(done, total int) { fmt.Fprintf(e.Stderr, "makespan: %d/%d trials\n", done, total) }
					}
					if tail, err = sim.AnalyzePlanTail(p, tp); err != nil {
						return simErr(err)
					}
				}
				out := sim.PlanAnalysis{Analysis: a, Tail: tail}
				if *asJSON {
					return writeJSON(e.Stdout, out)
				}
				return out.WriteText(e.Stdout, p.File)
			}
		},
	}
}

// loadPlan reads and parses a plan; validation problems are printed and
// become errSilent.
func loadPlan(e *env, name string) (*plan.Plan, error) {
	var data []byte
	var err error
	file := name
	if name == "-" {
		file = "<stdin>"
		data, err = io.ReadAll(io.LimitReader(e.Stdin, 64<<20))
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	p, err := plan.Parse(file, data)
	if err != nil {
		return nil, reportPlanErrors(e, err)
	}
	return p, nil
}

func reportPlanErrors(e *env, err error) error {
	var errs plan.Errors
	if !errors.As(err, &errs) {
		return err
	}
	for _, fe := range errs {
		fmt.Fprintln(e.Stderr, fe)
	}
	return errSilent
}
