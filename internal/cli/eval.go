package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/apiary-dev/apiary/internal/access"
	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/eval"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/sim"
)

func evalCommand() *command {
	return &command{
		Name:    "eval",
		Args:    "TASKSET",
		Summary: "is a swarm better than one agent with the same budget? run a task set both ways",
		Help: `Runs the task set in directory TASKSET twice, each time in a fresh repository
built from its repo/: once with one agent given every task (one plan task
listing all the prompts), once as a swarm of one agent per task (the set's
dependencies; at most --max-parallel at once).

Both arms reach the models through a metering gateway of their own, with the
same hard budget (--budget-usd, and --budget-tokens if given): every key the
arm's attempts get draws on it, and a request that could take the arm past
it is refused before it is sent. The gateway's ledger is the arms' cost and
tokens; an arm whose cost it cannot know (no request seen, a model without
a price) shows "n/a", and then cost gives no verdict.

Both arms are graded with the same checks, each on its own: the set's
visible checks, and every task's visible and hidden checks (the hidden ones
are never in the repository, the plan or any envelope), run after the run on
the arm's work — the final tree, with the work of any task the gates did not
integrate laid over it. Quality Q is the fraction of checks passed; a task
is accepted when its work was integrated and all of its own checks pass.
Time is from the start of the arm's run to its last integration, waiting
for a worker slot included.

The verdict: "swarm dominates" when the swarm is no worse on quality, time
and cost per accepted task (when known) and strictly better on one, else
"single agent preferred". Reported beside it, not judged: token
amplification (swarm tokens / single tokens) and coordination messages per
task. The report first states every input that decides the verdict: the
budgets, the agents and model, the seed and turn time of a scripted model,
max parallel, the task set's digest and the grading's checks (--json lists
them).

Agents (--agent):
  scripted          the task set's scripted agents: Claude Code scripted
                    through an in-process llmfake (no key, no cost) when the
                    claude CLI is found, else command agents
  scripted-claude   the scripted agents as Claude Code through llmfake
  scripted-command  the scripted agents as command agents (they call no
                    model: cost and tokens are n/a)
  PROFILE           a real agent: claude, codex, gemini, opencode, aider or a profile
                    of --agents FILE, through the gateways in front of
                    --model-url (default $ANTHROPIC_BASE_URL, else the
                    Anthropic API) with the key in $APIARY_MODEL_KEY or
                    $ANTHROPIC_API_KEY (required)
  auto (default)    claude when a model key is set, else scripted

A scripted model takes the same time for every turn (a read, a write or
the final answer): the task set's scripted.turn_s, or --turn-s. That decides
how much of an arm's time is the model's and how much apiary's own
(worktrees, gates, and the integrations, which are serial), so the report
states it. examples/eval-parallel and examples/eval-sequential are two task
sets to start from; docs/eval.md has their results and how to rerun them.

The repositories (and each arm's gateway ledger, ARM/gateway.db) are removed
afterwards unless --keep (or --dir) is given. --out DIR writes a chart of
the comparison (eval.svg, eval.png).`,
		Examples: []string{
			"apiary eval examples/eval-parallel --budget-usd 5 --agent scripted-claude",
			"apiary eval examples/eval-sequential --budget-usd 5 --agent scripted-claude --json",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			o := evalFlags{}
			fs.Float64Var(&o.budget, "budget-usd", 0, "each arm's hard budget in `USD` (required)")
			fs.Int64Var(&o.budgetTokens, "budget-tokens", 0, "each arm's hard budget in `TOKENS`, input and output (default: none)")
			fs.BoolVar(&o.json, "json", false, "print the evaluation as JSON")
			fs.StringVar(&o.agent, "agent", "auto", "agents: `KIND` scripted, scripted-claude, scripted-command, a profile name, or auto")
			fs.StringVar(&o.agents, "agents", "", "agent profiles `FILE` (YAML mapping of name to profile)")
			fs.StringVar(&o.claude, "claude", "", "the Claude Code executable `PATH` (default: looked up)")
			fs.IntVar(&o.maxParallel, "max-parallel", 0, "the swarm's agents at once, `N` (default: the task set's, else one per task)")
			fs.Uint64Var(&o.seed, "seed", 1, "the scripted model's `SEED`")
			o.turnS = -1
			fs.Func("turn-s", "the scripted model's time per turn in `SECONDS` (default: the task set's scripted.turn_s)", func(v string) error {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || !(f >= 0 && f <= 600) {
					return errors.New("want seconds in [0, 600]")
				}
				o.turnS = f
				return nil
			})
			fs.StringVar(&o.dir, "dir", "", "build the repositories in `DIR` (created; kept)")
			fs.BoolVar(&o.keep, "keep", false, "keep the repositories and print where they are")
			fs.StringVar(&o.out, "out", "", "write the comparison chart to `DIR`")
			fs.StringVar(&o.modelURL, "model-url", "", "base `URL` of the model API for real agents (default $ANTHROPIC_BASE_URL)")
			return func(ctx context.Context, e *env, args []string) error {
				if err := exactArgs(args, 1, "TASKSET"); err != nil {
					return err
				}
				return o.run(ctx, e, args[0])
			}
		},
	}
}

type evalFlags struct {
	budget, turnS         float64
	budgetTokens          int64
	seed                  uint64
	json, keep            bool
	agent, agents, claude string
	maxParallel           int
	dir, out, modelURL    string
}

func (o *evalFlags) run(ctx context.Context, e *env, setDir string) error {
	if !(o.budget > 0) {
		return usagef("--budget-usd must be a positive number of dollars")
	}
	if o.budgetTokens < 0 {
		return usagef("--budget-tokens must not be negative")
	}
	if o.maxParallel < 0 {
		return usagef("--max-parallel must not be negative")
	}
	ts, err := eval.Load(setDir)
	if err != nil {
		return err
	}
	key := modelKey(e)
	s, err := eval.Prepare(ts, eval.Request{Agent: o.agent, HasKey: key != "",
		Profiles:   func() (map[string]plan.Agent, error) { return loadAgents(o.agents) },
		Claude:     o.claude,
		FindClaude: func() string { return agent.FindCLI("claude") },
		TurnS:      o.turnS, Seed: o.seed, Dir: o.dir, Keep: o.keep})
	var oe *eval.OptionError
	if errors.As(err, &oe) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	rt := &eval.Local{}
	gw := &access.Eval{Dir: s.Dir, Upstream: o.modelURL, Key: key, Log: e.Stderr}
	opts := eval.Options{Budget: eval.Budget{USD: o.budget, Tokens: o.budgetTokens}, MaxParallel: o.maxParallel,
		Runtime: rt, Gateway: gw, WorkDir: s.Dir, AgentName: s.Kind, Scripted: s.Scripted, Agent: s.Agent}
	if !o.json {
		opts.Progress = e.Stderr
	}
	if s.Scripted {
		gw.Upstream, gw.Key = s.ModelURL, eval.ScriptedUpstreamKey
		seed := o.seed
		opts.Seed = &seed
	} else {
		if gw.Upstream == "" {
			gw.Upstream = e.Getenv("ANTHROPIC_BASE_URL")
		}
		if gw.Upstream == "" {
			gw.Upstream = access.DefaultModelURL
		}
		rt.Writes = newMCPSurface
	}
	if s.Claude != "" {
		rt.AgentBin = map[string]string{"claude": s.Claude}
	}
	if !o.json {
		fmt.Fprintf(e.Stdout, "apiary eval: %s, %s agents, work in %s\n", ts.Name, s.Kind, s.Dir)
	}
	res, err := eval.Run(ctx, ts, opts)
	if err != nil {
		return err
	}
	if o.out != "" {
		if err := writeCharts(o.out, "", []sim.NamedChart{{Name: "eval", Chart: res.Chart()}}); err != nil {
			return err
		}
	}
	if o.json {
		out := eval.Output{Agents: s.Kind, Result: res}
		if s.Keep {
			out.Dir = s.Dir
		}
		return writeJSON(e.Stdout, out)
	}
	fmt.Fprintln(e.Stdout)
	if err := res.WriteText(e.Stdout); err != nil {
		return err
	}
	if s.Keep {
		fmt.Fprintf(e.Stdout, "\nkept in %s: single/repo and swarm/repo (apiary status --repo DIR), their ledgers single/gateway.db and swarm/gateway.db (apiary gateway usage --ledger FILE)\n", s.Dir)
	}
	return nil
}
