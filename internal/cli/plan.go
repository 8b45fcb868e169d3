package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/sim"
)

func planCommand() *command {
	return &command{
		name:    "plan",
		summary: "validate and analyse plan files",
		help: `A plan file (YAML or JSON, schema in docs/schema/plan.json) lists agent
profiles and a DAG of tasks: each with an objective, an agent, dependencies,
a write scope, sealed paths, check commands, forbidden diff patterns, a
budget and an estimate. These commands check a plan and predict what
running it in parallel can gain, without running anything.`,
		subs: []*command{planValidateCommand(), planAnalyzeCommand()},
	}
}

func planValidateCommand() *command {
	return &command{
		name:    "validate",
		args:    "PLAN",
		summary: "check a plan file against the schema and the DAG rules",
		help: `Checks PLAN ("-" reads stdin) against the plan schema and the rules a schema
cannot express: unique task ids matching [a-z0-9-]{1,64}, known dependencies
and agents, no dependency cycle, write scopes and sealed paths inside the
repository. With --repo it also checks the repository side: the integration
branch exists (by default, the current branch) and no tracked file has
uncommitted changes.

Every problem is printed on stderr as FILE:LINE:COL: FIELD: MESSAGE and the
exit status is 1; a valid plan prints a one-line summary.`,
		setup: func(fs *flag.FlagSet) runFunc {
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
				defined := 0
				for _, a := range p.Agents {
					if !a.Builtin {
						defined++
					}
				}
				fmt.Fprintf(e.stdout, "%s: ok: %d tasks, %d agent profile%s", p.File, len(p.Tasks), defined, map[bool]string{true: "", false: "s"}[defined == 1])
				if branch != "" {
					fmt.Fprintf(e.stdout, ", integrating into %s", branch)
				}
				fmt.Fprintln(e.stdout)
				return nil
			}
		},
	}
}

func planAnalyzeCommand() *command {
	return &command{
		name:    "analyze",
		args:    "PLAN",
		summary: "predict work, critical path, makespan and speedup of a plan",
		help: `Analyses PLAN ("-" reads stdin) from the tasks' estimate_s (60 s when absent):

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
		setup: func(fs *flag.FlagSet) runFunc {
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
						tp.Progress = func(done, total int) { fmt.Fprintf(e.stderr, "makespan: %d/%d trials\n", done, total) }
					}
					if tail, err = sim.AnalyzePlanTail(p, tp); err != nil {
						return simErr(err)
					}
				}
				if *asJSON {
					enc := json.NewEncoder(e.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(struct {
						*plan.Analysis
						Tail *sim.PlanTail `json:"tail,omitempty"`
					}{a, tail})
				}
				if err := printAnalysis(e.stdout, p.File, a); err != nil {
					return err
				}
				if tail != nil {
					return printPlanTail(e.stdout, tail)
				}
				return nil
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
		data, err = io.ReadAll(io.LimitReader(e.stdin, 64<<20))
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
		fmt.Fprintln(e.stderr, fe)
	}
	return errSilent
}

func printAnalysis(w io.Writer, file string, a *plan.Analysis) error {
	secs := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) + " s" }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s: %d tasks on %d workers\n", file, a.Tasks, a.Workers)
	fmt.Fprintf(tw, "work\t%s\n", secs(a.WorkS))
	fmt.Fprintf(tw, "critical path\t%s\t%s\n", secs(a.CriticalPathS), strings.Join(a.CriticalPath, " → "))
	exact := "maximum antichain"
	if !a.WidthExact {
		exact = fmt.Sprintf("widest level: a lower bound, exact only up to %d tasks", plan.MaxExactWidthTasks)
	}
	fmt.Fprintf(tw, "width\t%d\t(%s: %s)\n", a.Width, exact, abbreviate(a.Antichain, 8))
	fmt.Fprintf(tw, "level width\t%d\t(widest of %d levels; peak parallelism %d)\n", a.LevelWidth, a.Levels, a.PeakParallelism)
	fmt.Fprintf(tw, "makespan\t%s\t(list schedule, critical path first)\n", secs(a.MakespanS))
	fmt.Fprintf(tw, "speedup\t%.2f\t(work-span bound %.2f; Amdahl bound %.2f with serial fraction %.2f)\n", a.Speedup, a.SpanBound, a.AmdahlBound, a.SerialFraction)
	if err := tw.Flush(); err != nil {
		return err
	}
	if a.DefaultedEstimates > 0 {
		fmt.Fprintf(w, "note: %d task(s) have no estimate_s and count as %v s\n", a.DefaultedEstimates, plan.DefaultEstimateS)
	}
	if len(a.Schedule) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "\ntask\tworker\tstart\tfinish")
		for _, s := range a.Schedule {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", s.ID, s.Worker, secs(s.StartS), secs(s.FinishS))
		}
		return tw.Flush()
	}
	return nil
}

// abbreviate joins the first n ids with ", " and says how many more.
func abbreviate(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:n], ", "), len(ids)-n)
}

// printPlanTail renders the spread analysis after the analysis.
func printPlanTail(w io.Writer, t *sim.PlanTail) error {
	fmt.Fprintf(w, "\nspread: p90 = %g x estimate", t.P90Ratio)
	if t.StragglerProb > 0 {
		fmt.Fprintf(w, ", %s of attempts straggle %gx", sim.Pct(t.StragglerProb), t.StragglerFactor)
	}
	fmt.Fprintf(w, " (makespan: %d Monte Carlo trials, seed %d)\n", t.Trials, t.Seed)
	row := func(name string, ps []sim.Percentile, mean float64) []string {
		r := []string{name}
		for _, pc := range ps {
			r = append(r, sim.Percentile{Q: pc.Q, S: pc.S}.String())
		}
		return append(r, sim.Secs4(mean))
	}
	head := []string{"makespan"}
	for _, pc := range t.Makespan.Single {
		head = append(head, "p"+strconv.FormatFloat(pc.Q*100, 'f', -1, 64))
	}
	head = append(head, "mean")
	rows := [][]string{head,
		row("  each task once", t.Makespan.Single, t.Makespan.MeanSingleS),
		row("  with the policies", t.Makespan.WithPolicies, t.Makespan.MeanPolicyS)}
	if len(t.Tasks) > 0 {
		rows = append(rows, []string{"speculative tasks"})
	}
	for _, tt := range t.Tasks {
		rows = append(rows, row("  "+tt.ID+" once", tt.Single.Percentiles, tt.Single.MeanS),
			row("  "+tt.ID+" "+tt.Policy.String(), tt.WithPolicy.Percentiles, tt.WithPolicy.MeanS))
	}
	width := make([]int, len(head))
	for _, r := range rows {
		if len(r) == 1 {
			continue
		}
		for c, cell := range r {
			width[c] = max(width[c], len(cell))
		}
	}
	for _, r := range rows {
		if len(r) == 1 {
			fmt.Fprintln(w, r[0])
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%-*s", width[0], r[0])
		for c := 1; c < len(r); c++ {
			fmt.Fprintf(&b, "  %*s", width[c], r[c])
		}
		fmt.Fprintln(w, b.String())
	}
	for _, tt := range t.Tasks {
		fmt.Fprintf(w, "%s: attempt-seconds %s once, %s with its policy\n", tt.ID, sim.Secs4(tt.Single.AttemptS), sim.Secs4(tt.WithPolicy.AttemptS))
	}
	return nil
}
