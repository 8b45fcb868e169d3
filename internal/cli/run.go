package cli

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

func runCommand() *command {
	return &command{
		name:    "run",
		args:    "PLAN",
		summary: "run a plan's tasks in worktrees behind gates and integrate them",
		help: `Runs the tasks of PLAN (see 'apiary plan') in the git repository of the current
directory (or --repo): each attempt in its own worktree at the integration
head of its dispatch, with its own envelope, log and model access. apiary
commits what the agent leaves, checks it with the gates (write scope, sealed
paths, forbidden diff patterns, then the check commands on the tree being
integrated) and integrates it into the integration branch by fast-forward,
three-way merge or a reconciliation task — the branch moves only by
compare-and-swap. Tasks start critical-path first, --max-parallel at a time.

It prints "run RUN_ID" first (on stderr with --json), progress while it runs
(a bar on a terminal, lines otherwise), and a report: per task and in total
the tokens, dollars, wall time, attempts, gate and integration, and the
predicted and achieved critical paths. --json prints the report as JSON.
The exit status is 0 only if every task succeeded.

The branch moves only by update-ref; if it is the one checked out, the
checkout's files are brought up to date when the run ends.

Everything is recorded under .apiary/runs/RUN_ID in the repository. After an
interruption (even kill -9), --resume RUN_ID continues the run: tasks with a
receipt are not run again, a task whose commit reached the branch gets its
receipt, and tasks in flight run again.

Planner mode: --goal TEXT --planner PROFILE --worker PROFILE has the planner
write the plan (its only writable file), validates it (handing the errors
back for one correction) and runs it with the worker profile. Profiles are
the built-ins (claude, codex, gemini, aider) or those of --agents FILE, a
YAML mapping like a plan's agents:.

When a model URL (--model-url, default $ANTHROPIC_BASE_URL) or a key
($APIARY_MODEL_KEY, else $ANTHROPIC_API_KEY) is given, the run starts apiary's
gateway in-process on loopback in front of that URL (default
https://api.anthropic.com) with that key: every attempt gets its own virtual
key carrying its task's USD and token budget, the agents never see the real
key, all of them share the gateway's admission, pacing and retries, and each
task's tokens and USD in the report come from the gateway's ledger
(.apiary/gateway.db; see apiary gateway usage --ledger). --no-gateway hands
the agents the URL and key directly instead (usage then comes from the agents'
own reports). Claude Code agents also get apiary's MCP write surface (apiary
mcp) rooted at their worktree and confined to their write scope.`,
		setup: func(fs *flag.FlagSet) runFunc {
			f := runFlags{}
			fs.BoolVar(&f.json, "json", false, "print the report as JSON")
			fs.IntVar(&f.maxParallel, "max-parallel", 0, "run at most `N` attempts at once (default: the plan's max_parallel)")
			fs.StringVar(&f.resume, "resume", "", "continue the interrupted run `RUN_ID`")
			fs.StringVar(&f.repo, "repo", ".", "the git repository, `DIR`")
			fs.IntVar(&f.maxAttempts, "max-attempts", 0, "at most `N` attempts per task, counting re-runs after a failed reconciliation (default 3)")
			fs.StringVar(&f.reconcile, "reconcile-agent", "", "agent `PROFILE` for reconciliation tasks (default: the task's own)")
			fs.StringVar(&f.goal, "goal", "", "planner mode: the goal `TEXT` to plan and run")
			fs.StringVar(&f.planner, "planner", "", "planner mode: the planner's agent `PROFILE`")
			fs.StringVar(&f.worker, "worker", "", "planner mode: the workers' agent `PROFILE`")
			fs.StringVar(&f.agents, "agents", "", "agent profiles `FILE` (YAML mapping of name to profile)")
			fs.StringVar(&f.modelURL, "model-url", "", "base `URL` of the model API the agents use (default $ANTHROPIC_BASE_URL)")
			fs.BoolVar(&f.noGateway, "no-gateway", false, "give agents the model URL and key directly, without the run's gateway")
			fs.Var(&f.agentBins, "agent-bin", "`KIND=PATH`: run agents of KIND (claude, codex, gemini, aider) from PATH (repeatable)")
			f.sup.register(fs)
			swarmRunFlags(fs, &f.swarm)
			fs.StringVar(&f.dash, "dash", "", "serve the dashboard on `ADDR` (e.g. 127.0.0.1:7421) while the run goes on")
			return func(ctx context.Context, e *env, args []string) error {
				return f.run(ctx, e, args)
			}
		},
	}
}

type runFlags struct {
	json                  bool
	maxParallel           int
	maxAttempts           int
	resume, repo          string
	reconcile             string
	goal, planner, worker string
	agents, modelURL      string
	noGateway             bool
	agentBins             stringList
	sup                   supFlags
	swarm                 swarmFlags
	dash                  string
}

func (f *runFlags) run(ctx context.Context, e *env, args []string) error {
	if f.swarm.mode != "" {
		return f.runSwarm(ctx, e, args)
	}
	switch {
	case f.maxParallel < 0 || f.maxAttempts < 0:
		return usagef("--max-parallel and --max-attempts must not be negative")
	case f.resume != "" && (len(args) > 0 || f.goal != ""):
		return usagef("--resume takes no PLAN and no --goal")
	case f.goal != "" && (len(args) > 0 || f.planner == "" || f.worker == ""):
		return usagef("--goal needs --planner and --worker, and no PLAN")
	case f.resume == "" && f.goal == "" && len(args) != 1:
		return usagef("want PLAN (or --resume RUN_ID, or --goal)")
	}
	agents, err := loadAgents(f.agents)
	if err != nil {
		return err
	}
	repo := git.New(f.repo, git.Options{})
	root, err := repo.TopLevel(ctx)
	if err != nil {
		return fmt.Errorf("%s is not in a git repository: %w", f.repo, err)
	}
	cfg := runs.Config{Repo: repo.At(root), MaxParallel: f.maxParallel, MaxAttempts: f.maxAttempts, ReconcileAgent: f.reconcile}
	url := f.modelURL
	if url == "" {
		url = e.getenv("ANTHROPIC_BASE_URL")
	}
	key := e.getenv("APIARY_MODEL_KEY")
	if key == "" {
		key = e.getenv("ANTHROPIC_API_KEY")
	}
	for _, kv := range f.agentBins {
		kind, bin, ok := strings.Cut(kv, "=")
		if !ok || kind == "" || bin == "" {
			return usagef("--agent-bin %q: want KIND=PATH", kv)
		}
		if cfg.AgentBin == nil {
			cfg.AgentBin = map[string]string{}
		}
		cfg.AgentBin[kind] = bin
	}
	agentURL := url // where the agents' model requests go
	switch {
	case url == "" && key == "":
		// The agents' own configuration reaches the models.
	case f.noGateway:
		cfg.Models = directAccess{baseURL: url, key: key}
	default:
		access, stop, err := startRunGateway(ctx, runGatewayLedger(root), url, key, e.stderr)
		var nk *gateway.NoKeyError
		if errors.As(err, &nk) {
			return fmt.Errorf("the run's gateway to %s has no real API key (agents get virtual keys only): set APIARY_MODEL_KEY or ANTHROPIC_API_KEY, or pass --no-gateway", url)
		}
		if err != nil {
			return err
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintf(e.stderr, "apiary: run gateway: %v\n", err)
			}
		}()
		cfg.Models, agentURL = access, access.url
	}
	if ws, err := newMCPSurface(root); err == nil {
		cfg.Writes = ws
	}
	if err := f.sup.apply(e, &cfg, agentURL); err != nil {
		return err
	}
	id := f.resume
	if id == "" {
		if id, err = rundir.NewID(time.Now(), rand.Reader); err != nil {
			return err
		}
	}
	nr := runs.NewRun{ID: id, Agents: agents, Goal: f.goal, Planner: f.planner, Worker: f.worker}
	if f.goal == "" && f.resume == "" {
		if nr.PlanData, err = os.ReadFile(args[0]); err != nil {
			return err
		}
		nr.PlanFile = args[0]
	}
	stopObserving, err := observeRun(ctx, e, root, id, f.dash, &cfg)
	if err != nil {
		return err
	}
	defer stopObserving()
	rep, err := runAndReport(ctx, e, cfg, nr, f.resume != "", f.json)
	if err != nil {
		return err
	}
	if !rep.OK() {
		return errSilent
	}
	return nil
}

// runAndReport starts (or resumes) a run with a live progress display and
// prints its report. Plan problems are printed and become errSilent.
func runAndReport(ctx context.Context, e *env, cfg runs.Config, nr runs.NewRun, resume, asJSON bool) (*runs.Report, error) {
	rep, err := execRun(ctx, e, cfg, nr, resume, asJSON)
	if rep == nil {
		return nil, err
	}
	if !asJSON {
		fmt.Fprintln(e.stdout)
	}
	if werr := writeReport(e.stdout, rep, asJSON); werr != nil {
		return nil, werr
	}
	if err != nil {
		return nil, err
	}
	if rep.Status == "interrupted" {
		fmt.Fprintf(e.stderr, "apiary: run %s interrupted; continue it with: apiary run --resume %s\n", rep.RunID, rep.RunID)
	}
	return rep, nil
}

// execRun runs with a progress display: on stdout (a bar on a terminal,
// lines otherwise), or with asJSON only as a bar on a terminal stderr. It
// prints "run RUN_ID" first (on stderr with asJSON) once the run exists —
// after the plan and the repository passed their checks. Plan problems are
// printed and become errSilent. A report is returned whenever the run got
// as far as having one.
func execRun(ctx context.Context, e *env, cfg runs.Config, nr runs.NewRun, resume, asJSON bool) (*runs.Report, error) {
	head := e.stdout
	if asJSON {
		head = e.stderr
	}
	var prog *runs.Progress
	switch {
	case !asJSON:
		prog = &runs.Progress{W: e.stdout, TTY: isTerminal(e.stdout)}
	case isTerminal(e.stderr):
		prog = &runs.Progress{W: e.stderr, TTY: true}
	}
	announced := false
	observe := cfg.OnEvent
	cfg.OnEvent = func(ev runs.Event) {
		if observe != nil {
			observe(ev)
		}
		if !announced && (ev.Kind == rundir.EvRunStarted || ev.Kind == rundir.EvRunResumed) {
			announced = true
			fmt.Fprintf(head, "run %s\n", ev.Run)
		}
		if prog != nil {
			prog.Event(ev)
		}
	}
	var rep *runs.Report
	var err error
	if resume {
		rep, err = runs.Resume(ctx, cfg, nr.ID)
	} else {
		rep, err = runs.Start(ctx, cfg, nr)
	}
	if prog != nil {
		prog.Close()
	}
	var perrs plan.Errors
	if errors.As(err, &perrs) {
		return nil, reportPlanErrors(e, err)
	}
	return rep, err
}

func writeReport(w io.Writer, rep *runs.Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(w)
}
