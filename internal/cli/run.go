package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/access"
	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/proc"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

func runCommand() *command {
	return &command{
		Name:    "run",
		Args:    "PLAN",
		Summary: "run a plan's tasks in worktrees behind gates and integrate them",
		Help: `Runs the tasks of PLAN (see 'apiary plan') in the git repository of the current
directory (or --repo): each attempt in its own worktree at the integration
head of its dispatch, with its own envelope, log and model access. apiary
commits what the agent leaves, checks it with the gates (write scope, sealed
paths, forbidden diff patterns, then the check commands on the tree being
integrated) and integrates it into the integration branch by fast-forward,
three-way merge or a reconciliation task — the branch moves only by
compare-and-swap. Tasks start critical-path first, --max-parallel at a time.

It prints "run RUN_ID" first, progress while it runs (a bar on a terminal,
lines otherwise) and a report: per task and in total the tokens, dollars,
wall time, attempts, gate and integration, and the predicted and achieved
critical paths. --json prints the report as JSON on stdout, with "run
RUN_ID" and the progress on stderr. The exit status is 0 only if every task
succeeded and the checkout (below) was brought along.

The branch moves only by update-ref; if it is the one checked out, the
checkout's index and files are brought to the integrated work together when
the run ends, keeping your own changes. If one of those is to a file the
run changed too, your files are left as they are with HEAD detached at the
commit they match (so nothing shows as staged), and the last line says how
to finish.

Everything is recorded under .apiary/runs/RUN_ID in the repository. After an
interruption (even kill -9), --resume RUN_ID continues the run with the
settings it was started with (--model-url, --no-gateway, --dash, and
--agent-bin kind by kind) unless given again (--dash '' serves no
dashboard, --no-gateway=false starts the gateway): every process the killed
run left is ended first, tasks with a receipt are not run again, a task
whose commit reached the branch gets its receipt, and tasks in flight run
again; the checkout, if the killed run left it behind the branch, is
brought along when the resumed run ends.

Every agent and every check runs in a scope of its own: a cgroup v2 where
the machine allows (else, or with --process-groups, a process group), with
the run's and the scope's markers in its environment. When the agent exits,
whatever it left running gets SIGTERM, then SIGKILL after the grace period;
after a crash, --resume and apiary reap find every survivor by its cgroup or
its markers, including daemons that left their process group.

Planner mode: --goal TEXT --planner PROFILE --worker PROFILE has the planner
write the plan (its only writable file), validates it (handing the errors
back for one correction) and runs it with the worker profile. Profiles are
the built-ins (claude, codex, gemini, opencode, aider) or those of --agents FILE, a
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
		Examples: []string{
			"apiary run plan.yaml",
			"apiary run --max-parallel 4 --dash 127.0.0.1:7421 plan.yaml",
			"apiary run --mode swarm --board etcd://127.0.0.1:2379 plan.yaml",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			f := runFlags{}
			f.register(fs)
			return func(ctx context.Context, e *env, args []string) error {
				f.given(fs)
				return f.run(ctx, e, args)
			}
		},
	}
}

// register declares the flags of apiary run.
func (f *runFlags) register(fs *flag.FlagSet) {
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
	fs.Var(&f.agentBins, "agent-bin", "`KIND=PATH`: run agents of KIND (claude, codex, gemini, opencode, aider) from PATH (repeatable)")
	f.sup.register(fs)
	swarmRunFlags(fs, &f.swarm)
	fs.StringVar(&f.dash, "dash", "", "serve the dashboard on `ADDR` (e.g. 127.0.0.1:7421) while the run goes on")
	fs.BoolVar(&f.processGroups, "process-groups", false, "contain agents and checks in marked process groups, not a cgroup each")
	fs.IntVar(&f.poolSize, "worktree-pool", 0, "keep `N` idle worktrees for attempts and checks to reuse (default: max_parallel; -1: a new worktree for each)")
	fs.DurationVar(&f.poolIdle, "worktree-max-idle", 0, "remove a pooled worktree idle longer than `D` (default: keep it until the run ends)")
	fs.BoolVar(&f.sparse, "sparse", false, "check out only the directories of a task's inputs and write scope, for tasks that list their inputs")
}

// given notes the flags the command line set (after parsing).
func (f *runFlags) given(fs *flag.FlagSet) {
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
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
	processGroups         bool
	poolSize              int
	poolIdle              time.Duration
	sparse                bool
	// set names the flags given on the command line (nil: none known).
	set map[string]bool
}

func (f *runFlags) run(ctx context.Context, e *env, args []string) error {
	if f.swarm.mode != "" {
		return f.runSwarm(ctx, e, args)
	}
	if set := f.swarm.merge.set(); len(set) > 0 {
		return usagef("%s: the merge role's policy applies only with --mode swarm", strings.Join(set, ", "))
	}
	// Before the run's gateway and ledger exist: where agents' processes
	// cannot be contained (Windows) no run starts (see proc.Supported).
	if err := proc.Supported(); err != nil {
		return err
	}
	switch {
	case f.maxParallel < 0 || f.maxAttempts < 0:
		return usagef("--max-parallel and --max-attempts must not be negative")
	case f.swarm.hedgeAfter < 0:
		return usagef("--hedge-after must not be negative")
	case f.poolIdle < 0:
		return usagef("--worktree-max-idle must not be negative")
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
	// What the command line names is checked before the run writes
	// anything (its state directory, its gateway's ledger).
	if f.dash != "" {
		if err := checkListen("--dash", f.dash); err != nil {
			return err
		}
	}
	var planData []byte
	if f.goal == "" && f.resume == "" {
		if planData, err = os.ReadFile(args[0]); err != nil {
			return err
		}
	}
	repo := git.New(f.repo, git.Options{})
	root, err := repo.TopLevel(ctx)
	if err != nil {
		return repoError(f.repo, err)
	}
	if f.resume != "" {
		if err := f.recorded(root); err != nil {
			return err
		}
	}
	cfg := runs.Config{Repo: repo.At(root), MaxParallel: f.maxParallel, MaxAttempts: f.maxAttempts, ReconcileAgent: f.reconcile,
		ProcessGroups: f.processGroups, HedgeAfter: f.swarm.hedgeAfter,
		WorktreePool: runs.PoolConfig{Off: f.poolSize < 0, Size: max(f.poolSize, 0), MaxIdle: f.poolIdle, Sparse: f.sparse}}
	url, key := modelEndpoint(e, f.modelURL)
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
		cfg.Models = access.Direct{BaseURL: url, Key: key}
	default:
		gw, stop, err := access.StartGateway(ctx, access.RunLedger(root), url, key, e.Stderr)
		var nk *gateway.NoKeyError
		if errors.As(err, &nk) {
			return fmt.Errorf("the run's gateway to %s has no real API key (agents get virtual keys only): set APIARY_MODEL_KEY or ANTHROPIC_API_KEY, or pass --no-gateway", url)
		}
		if err != nil {
			return err
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintf(e.Stderr, "apiary: run gateway: %v\n", err)
			}
		}()
		cfg.Models, agentURL = gw, gw.URL()
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
	nr := runs.NewRun{ID: id, Agents: agents, Goal: f.goal, Planner: f.planner, Worker: f.worker,
		ModelURL: f.modelURL, NoGateway: f.noGateway, Dash: f.dash}
	if f.goal == "" && f.resume == "" {
		nr.PlanData, nr.PlanFile = planData, args[0]
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
	if !rep.OK() || rep.Checkout != nil && !rep.Checkout.Synced {
		return errSilent
	}
	return nil
}

// recorded fills the flags a resume did not set from what the run was
// started with (run.json): the model URL, the gateway choice, the
// dashboard address and, kind by kind, the agent executables. A flag given
// again wins, even empty or false (--dash "" serves no dashboard,
// --no-gateway=false starts the run's gateway); an --agent-bin replaces
// the recorded executable of its kind only.
func (f *runFlags) recorded(root string) error {
	rec, err := rundir.Open(root, f.resume).Record()
	if err != nil {
		return err
	}
	o := rec.Options
	if !f.set["model-url"] && f.modelURL == "" {
		f.modelURL = o.ModelURL
	}
	if !f.set["no-gateway"] && !f.noGateway {
		f.noGateway = o.NoGateway
	}
	given := map[string]bool{}
	for _, kv := range f.agentBins {
		kind, _, _ := strings.Cut(kv, "=")
		given[kind] = true
	}
	for _, k := range slices.Sorted(maps.Keys(o.AgentBin)) {
		if !given[k] {
			f.agentBins = append(f.agentBins, k+"="+o.AgentBin[k])
		}
	}
	if !f.set["dash"] && f.dash == "" {
		f.dash = o.Dash
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
		fmt.Fprintln(e.Stdout)
	}
	if werr := runs.WriteReport(e.Stdout, rep, asJSON); werr != nil {
		return nil, werr
	}
	if err != nil {
		return nil, err
	}
	if rep.Status == "interrupted" {
		fmt.Fprintf(e.Stderr, "apiary: run %s interrupted; continue it with: apiary run --resume %s\n", rep.RunID, rep.RunID)
	}
	if c := rep.Checkout; c != nil && !c.Synced {
		fmt.Fprintf(e.Stderr, "apiary: the checkout of %s was not brought to the run's work: %s; to finish: %s\n", rep.IntegrationBranch, c.Reason, c.Hint)
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
	head := e.Stdout
	if asJSON {
		head = e.Stderr
	}
	// With --json the report owns stdout: progress goes to stderr.
	prog := &runs.Progress{W: e.Stdout, TTY: isTerminal(e.Stdout)}
	if asJSON {
		prog = &runs.Progress{W: e.Stderr, TTY: isTerminal(e.Stderr)}
	}
	rep, err := runs.Watched(ctx, cfg, nr, resume, head, prog)
	var perrs plan.Errors
	if errors.As(err, &perrs) {
		return nil, reportPlanErrors(e, err)
	}
	return rep, err
}
