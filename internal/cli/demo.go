package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/apiary-dev/apiary/internal/access"
	"github.com/apiary-dev/apiary/internal/demo"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

func demoCommand() *command {
	return &command{
		Name:    "demo",
		Summary: "run a six-task plan on a small Go project and show the report",
		Help: `Builds a temporary git repository holding a small Go project and runs a plan of
six tasks on it: two adding functions (parallel branches), two writing
sections of the same README (overlapping writes), one whose agent deletes a
test, and one that needs the first two and lands last. The report shows
every way apiary integrates or refuses work: fast-forwards, three-way
merges, a reconciliation and a gate rejection. The outcome depends only on
the plan's shape, never on timing.

The workers are real agent CLIs scripted through llmfake, apiary's fake
model server, started in-process (no key, no cost): --agent claude, codex,
gemini or opencode (each found in test/node_modules/.bin above the current
directory, or on PATH, or given with --bin); --agent auto (the default) is
claude when it is found; --agent command uses shell scripts that write the
same files. Checks run "go test ./..." when go is on PATH (see --checks).

The rejection is on purpose: tidy-tests' agent deletes a test, and the
forbidden-pattern gate refuses it — the run's status is "failed" because one
task did not land, and the demo's last line says that this is the gate doing
its job. The exit status is 0 when the run showed everything above.

--dash ADDR serves the dashboard (apiary dash) of the demo's run while it
goes on, and --slow makes every agent take a few seconds, so the DAG, the
integrations and the rejection can be watched as they happen.

The repository is removed afterwards unless --keep (or --dir) is given.`,
		Examples: []string{
			"apiary demo",
			"apiary demo --agent command --checks grep",
			"apiary demo --dash 127.0.0.1:7421 --slow",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			o := demoOptions{}
			fs.BoolVar(&o.json, "json", false, "print the report as JSON (with the demo's directory)")
			fs.BoolVar(&o.keep, "keep", false, "keep the demo repository and print where it is")
			fs.StringVar(&o.agent, "agent", "auto", "worker `KIND`: claude, codex, gemini, opencode, command, or auto (claude when found)")
			fs.StringVar(&o.bin, "bin", "", "the agent CLI's executable `PATH` (default: looked up)")
			fs.StringVar(&o.dir, "dir", "", "build the demo in `DIR` (created; kept) instead of a temporary directory")
			fs.StringVar(&o.checks, "checks", "auto", "check `KIND`: go (go test), grep, or auto (go when on PATH)")
			fs.StringVar(&o.dash, "dash", "", "serve the dashboard of the demo's run on `ADDR` (e.g. 127.0.0.1:7421) while it goes on")
			fs.BoolVar(&o.slow, "slow", false, "make every agent take a few seconds, to watch the run on the dashboard")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				return o.run(ctx, e)
			}
		},
	}
}

type demoOptions struct {
	json, keep, slow              bool
	agent, bin, dir, checks, dash string
}

func (o *demoOptions) run(ctx context.Context, e *env) error {
	kind, bin, err := demo.Workers(o.agent, o.bin)
	if err != nil {
		return demoUsage(err)
	}
	if o.dash != "" {
		if err := checkListen("--dash", o.dash); err != nil {
			return err
		}
	}
	d, err := demo.Setup(ctx, demo.Options{Kind: kind, Dir: o.dir, Keep: o.keep, Checks: o.checks, Slow: o.slow})
	if err != nil {
		return demoUsage(err)
	}
	defer d.Close()
	cfg := runs.Config{Repo: git.New(d.Repo, git.Options{}), ReconcileAgent: "reconciler"}
	if d.ModelURL != "" {
		cfg.Models = access.Direct{BaseURL: d.ModelURL, KeyFor: demo.Key}
		cfg.AgentBin = map[string]string{kind: bin}
	}
	id, err := rundir.NewID(time.Now(), rand.Reader)
	if err != nil {
		return err
	}
	if !o.json {
		fmt.Fprintf(e.Stdout, "apiary demo: %s workers, checks by %s, repository %s\n", d.Agents, d.Checks, d.Repo)
	}
	if o.dash != "" {
		stop, err := observeRun(ctx, e, d.Repo, id, o.dash, &cfg)
		if err != nil {
			return err
		}
		defer stop()
	}
	rep, err := execRun(ctx, e, cfg, runs.NewRun{ID: id, PlanFile: "plan.yaml", PlanData: d.Plan}, false, o.json)
	if rep == nil {
		return err
	}
	res := d.Result
	res.Report = rep
	if o.json {
		if werr := writeJSON(e.Stdout, res); werr != nil {
			return werr
		}
	} else {
		fmt.Fprintln(e.Stdout)
		if werr := rep.WriteText(e.Stdout); werr != nil {
			return werr
		}
		demo.WriteSummary(e.Stdout, rep, res.Dir, res.Repo, res.Kept)
	}
	if err != nil {
		return err
	}
	shown := demo.Shown(rep)
	if !o.json {
		demo.WriteVerdict(e.Stdout, rep, shown)
	}
	return shown
}

// demoUsage makes a demo.OptionError a usage error.
func demoUsage(err error) error {
	var oe *demo.OptionError
	if errors.As(err, &oe) {
		return usagef("%v", err)
	}
	return err
}
