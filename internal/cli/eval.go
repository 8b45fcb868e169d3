package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/eval"
	"github.com/apiary-dev/apiary/internal/llmfake"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/sim"
)

func evalCommand() *command {
	return &command{
		name:    "eval",
		args:    "TASKSET",
		summary: "is a swarm better than one agent with the same budget? run a task set both ways",
		help: `Runs the task set in directory TASKSET twice, each time in a fresh repository
built from its repo/: once with one agent given every task (one plan task
listing all the prompts) and the whole --budget-usd, once as a swarm of one
agent per task (the set's dependencies; at most --max-parallel at once)
sharing the same total budget in proportion to the tasks' estimates.

Each task is judged only by apiary's gates (write scope, forbidden patterns,
the set's visible checks, on the tree being integrated) and by its hidden
acceptance checks, which run after the run on a scratch copy of the final
tree with the task's hidden files laid over it; the agents never see them
(they are not in the repository, the plan or any envelope).

It reports, per arm: quality Q (accepted / attempted), the critical-path
time, the cost and the cost per accepted task, tokens; the swarm's token
amplification (its tokens over the single agent's); and a verdict: "swarm
dominates" when the swarm is no worse on quality, critical path and cost per
accepted task and strictly better on one, else "single agent preferred".

Agents (--agent):
  scripted          the task set's scripted agents: Claude Code scripted
                    through an in-process llmfake (no key, no cost) when the
                    claude CLI is found, else command agents
  scripted-claude   the scripted agents as Claude Code through llmfake
  scripted-command  the scripted agents as command agents
  PROFILE           a real agent: claude, codex, gemini, aider or a profile
                    of --agents FILE; it reaches the models as 'apiary run'
                    agents do ($ANTHROPIC_BASE_URL, $APIARY_MODEL_KEY or
                    $ANTHROPIC_API_KEY)
  auto (default)    claude when a model key is set, else scripted

The repositories are removed afterwards unless --keep (or --dir) is given.
--out DIR writes a chart of the comparison (eval.svg, eval.png).`,
		setup: func(fs *flag.FlagSet) runFunc {
			o := evalFlags{}
			fs.Float64Var(&o.budget, "budget-usd", 0, "total budget of each arm in `USD` (required)")
			fs.BoolVar(&o.json, "json", false, "print the evaluation as JSON")
			fs.StringVar(&o.agent, "agent", "auto", "agents: `KIND` scripted, scripted-claude, scripted-command, a profile name, or auto")
			fs.StringVar(&o.agents, "agents", "", "agent profiles `FILE` (YAML mapping of name to profile)")
			fs.StringVar(&o.claude, "claude", "", "the Claude Code executable `PATH` (default: looked up)")
			fs.IntVar(&o.maxParallel, "max-parallel", 0, "the swarm's agents at once, `N` (default: the task set's, else one per task)")
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
	budget                float64
	json, keep            bool
	agent, agents, claude string
	maxParallel           int
	dir, out, modelURL    string
}

// evalOutput is eval's JSON output.
type evalOutput struct {
	Dir    string `json:"dir,omitempty"`
	Agents string `json:"agents"`
	*eval.Result
}

func (o *evalFlags) run(ctx context.Context, e *env, setDir string) error {
	if !(o.budget > 0) {
		return usagef("--budget-usd must be a positive number of dollars")
	}
	if o.maxParallel < 0 {
		return usagef("--max-parallel must not be negative")
	}
	ts, err := eval.Load(setDir)
	if err != nil {
		return err
	}
	key := e.getenv("APIARY_MODEL_KEY")
	if key == "" {
		key = e.getenv("ANTHROPIC_API_KEY")
	}
	kind := o.agent
	if kind == "auto" {
		kind = "scripted"
		if key != "" {
			kind = "claude"
		}
	}
	claude := o.claude
	if kind == "scripted" || kind == "scripted-claude" {
		if claude == "" {
			claude = findAgentCLI("claude", "")
		}
		switch {
		case kind == "scripted" && claude == "":
			kind = "scripted-command"
		case kind == "scripted":
			kind = "scripted-claude"
		case claude == "":
			return errors.New("eval: the claude CLI was not found (install it, or pass --claude PATH or --agent scripted-command)")
		}
	}

	dir, keep := o.dir, o.keep || o.dir != ""
	if dir == "" {
		if dir, err = os.MkdirTemp("", "apiary-eval-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	rt := &eval.Local{Models: map[eval.Arm]attempt.ModelAccess{}}
	opts := eval.Options{BudgetUSD: o.budget, MaxParallel: o.maxParallel, Runtime: rt, WorkDir: dir}
	if !o.json {
		opts.Progress = e.stderr
	}
	switch kind {
	case "scripted-command":
		if opts.Agent, err = eval.WriteScriptedAgents(ts, filepath.Join(dir, "agents")); err != nil {
			return err
		}
	case "scripted-claude":
		stop, err := scriptedClaude(rt, ts)
		if err != nil {
			return err
		}
		defer stop()
		opts.Agent = plan.Agent{Kind: "claude", Model: "claude-sonnet-4-5"}
	default:
		agents, err := loadAgents(o.agents)
		if err != nil {
			return err
		}
		prof, ok := agents[kind]
		switch {
		case ok:
		case slices.Contains(plan.BuiltinAgents(), kind):
			prof = plan.Agent{Kind: kind}
		default:
			return usagef("--agent %q is neither scripted, scripted-claude, scripted-command, a built-in profile (%v) nor in --agents", kind, plan.BuiltinAgents())
		}
		opts.Agent = prof
		url := o.modelURL
		if url == "" {
			url = e.getenv("ANTHROPIC_BASE_URL")
		}
		if url != "" || key != "" {
			for _, arm := range []eval.Arm{eval.Single, eval.Swarm} {
				rt.Models[arm] = directAccess{baseURL: url, key: key}
			}
		}
		rt.Writes = newMCPSurface
	}
	if claude != "" {
		rt.AgentBin = map[string]string{"claude": claude}
	}
	if !o.json {
		fmt.Fprintf(e.stdout, "apiary eval: %s, %s agents, work in %s\n", ts.Name, kind, dir)
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
		out := evalOutput{Agents: kind, Result: res}
		if keep {
			out.Dir = dir
		}
		return writeJSON(e.stdout, out)
	}
	fmt.Fprintln(e.stdout)
	if err := res.WriteText(e.stdout); err != nil {
		return err
	}
	if keep {
		fmt.Fprintf(e.stdout, "\nkept in %s (single/repo and swarm/repo; apiary status --repo DIR)\n", dir)
	}
	return nil
}

// scriptedClaude serves the task set's scripted agents through an
// in-process llmfake for Claude Code workers: each arm's task has its own
// key, which selects its script — read nothing, write the task's files one
// per turn — and each request waits scripted.delay_s/2, so the agents take
// time as real ones do. stop shuts the server down.
func scriptedClaude(r *eval.Local, ts *eval.TaskSet) (stop func(), err error) {
	type call struct {
		Name  string         `json:"name"`
		Input map[string]any `json:"input"`
	}
	type turn struct {
		Text      string `json:"text"`
		ToolCalls []call `json:"tool_calls"`
	}
	var scripts []map[string]any
	for _, arm := range []eval.Arm{eval.Single, eval.Swarm} {
		files, err := ts.ScriptedFiles(arm)
		if err != nil {
			return nil, err
		}
		for task, fs := range files {
			paths := make([]string, 0, len(fs))
			for p := range fs {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			turns := []turn{}
			for _, p := range paths {
				turns = append(turns, turn{Text: "Writing " + p + ".",
					ToolCalls: []call{{Name: "Write", Input: map[string]any{"file_path": "{{cwd}}/" + p, "content": fs[p]}}}})
			}
			if len(turns) == 0 {
				turns = append(turns, turn{Text: "Nothing to change."})
			}
			scripts = append(scripts, map[string]any{"name": string(arm) + "-" + task, "match": map[string]any{"api_key": evalKey(arm, task)},
				"turns": turns, "final": "Done: " + task + "."})
		}
	}
	doc, err := json.Marshal(map[string]any{"session_key": "session", "scripts": scripts})
	if err != nil {
		return nil, err
	}
	scs, err := llmfake.ParseScripts("eval", doc)
	if err != nil {
		return nil, err
	}
	cfg := llmfake.Config{Scripts: scs}
	cfg.Faults.Latency = time.Duration(ts.Scripted.DelayS / 2 * float64(time.Second))
	srv, err := llmfake.New(cfg, llmfake.Options{Seed: 1})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := llmfake.Serve(l, srv)
	for _, arm := range []eval.Arm{eval.Single, eval.Swarm} {
		r.Models[arm] = directAccess{baseURL: hs.URL, keyFor: func(ref attempt.TaskRef) string {
			if ref.Role == attempt.RoleReconciler {
				return "eval-reconcile"
			}
			return evalKey(arm, ref.Task)
		}}
	}
	return func() { hs.Close() }, nil
}

func evalKey(arm eval.Arm, task string) string { return "eval-" + string(arm) + "-" + task }
