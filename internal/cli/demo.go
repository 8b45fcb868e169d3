package cli

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/llmfake"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

func demoCommand() *command {
	return &command{
		name:    "demo",
		summary: "run a six-task plan on a small Go project and show the report",
		help: `Builds a temporary git repository holding a small Go project and runs a plan of
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

The repository is removed afterwards unless --keep (or --dir) is given.`,
		setup: func(fs *flag.FlagSet) runFunc {
			o := demoOptions{}
			fs.BoolVar(&o.json, "json", false, "print the report as JSON (with the demo's directory)")
			fs.BoolVar(&o.keep, "keep", false, "keep the demo repository and print where it is")
			fs.StringVar(&o.agent, "agent", "auto", "worker `KIND`: claude, codex, gemini, opencode, command, or auto (claude when found)")
			fs.StringVar(&o.bin, "bin", "", "the agent CLI's executable `PATH` (default: looked up)")
			fs.StringVar(&o.dir, "dir", "", "build the demo in `DIR` (created; kept) instead of a temporary directory")
			fs.StringVar(&o.checks, "checks", "auto", "check `KIND`: go (go test), grep, or auto (go when on PATH)")
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
	json, keep              bool
	agent, bin, dir, checks string
}

// demoResult is the demo's JSON output.
type demoResult struct {
	Dir    string       `json:"dir"`
	Repo   string       `json:"repo"`
	Agents string       `json:"agents"` // claude | codex | gemini | opencode | command
	Checks string       `json:"checks"` // go test | grep
	Kept   bool         `json:"kept"`
	Report *runs.Report `json:"report"`
}

func (o *demoOptions) run(ctx context.Context, e *env) error {
	kind, bin := o.agent, o.bin
	switch kind {
	case "command":
	case "auto":
		if kind, bin = "claude", findAgentCLI("claude", bin); bin == "" {
			kind = "command"
		}
	case agent.KindClaude, agent.KindCodex, agent.KindGemini, agent.KindOpenCode:
		facts, _ := agent.FactsOf(kind)
		if bin = findAgentCLI(facts.Bin, bin); bin == "" {
			return fmt.Errorf("demo: the %s CLI (%s) was not found: install %s, or pass --bin PATH or --agent command", facts.CLI, facts.Bin, facts.Package)
		}
	default:
		return usagef("--agent must be claude, codex, gemini, opencode, command or auto, got %q", o.agent)
	}
	dir, keep := o.dir, o.keep || o.dir != ""
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "apiary-demo-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	res := demoResult{Dir: dir, Repo: filepath.Join(dir, "repo"), Agents: "command", Checks: "grep", Kept: keep}
	_, goErr := exec.LookPath("go")
	switch o.checks {
	case "auto":
	case "go":
		if goErr != nil {
			return fmt.Errorf("demo: --checks go: %w", goErr)
		}
	case "grep":
		goErr = errors.New("grep checks asked for")
	default:
		return usagef("--checks must be go, grep or auto, got %q", o.checks)
	}
	if goErr == nil {
		res.Checks = "go test"
	}
	res.Agents = kind
	if err := buildDemo(ctx, dir, res.Repo); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	planData := demoPlan(dir, kind, goErr == nil)
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(planData), 0o644); err != nil {
		return err
	}
	cfg := runs.Config{Repo: git.New(res.Repo, git.Options{}), ReconcileAgent: "reconciler"}
	if kind != "command" {
		srv, err := demoModelServer(kind)
		if err != nil {
			return err
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		hs := llmfake.Serve(l, srv)
		defer hs.Close()
		cfg.Models = directAccess{baseURL: hs.URL, keyFor: demoKey}
		cfg.AgentBin = map[string]string{kind: bin}
	}
	id, err := rundir.NewID(time.Now(), rand.Reader)
	if err != nil {
		return err
	}
	if !o.json {
		fmt.Fprintf(e.stdout, "apiary demo: %s workers, checks by %s, repository %s\n", res.Agents, res.Checks, res.Repo)
	}
	rep, err := execRun(ctx, e, cfg, runs.NewRun{ID: id, PlanFile: "plan.yaml", PlanData: []byte(planData)}, false, o.json)
	if rep == nil {
		return err
	}
	res.Report = rep
	if o.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if werr := enc.Encode(res); werr != nil {
			return werr
		}
	} else {
		fmt.Fprintln(e.stdout)
		if werr := rep.WriteText(e.stdout); werr != nil {
			return werr
		}
		writeDemoSummary(e, rep, res)
	}
	if err != nil {
		return err
	}
	return demoShown(rep)
}

// demoShown checks that the run showed what the demo promises.
func demoShown(rep *runs.Report) error {
	var missing []string
	t := rep.Totals
	if t.Integrated[attempt.Merge] < 1 {
		missing = append(missing, "a three-way merge")
	}
	if t.Integrated[attempt.Reconciled] < 1 {
		missing = append(missing, "a reconciliation")
	}
	if tr := rep.Task("tidy-tests"); tr == nil || tr.Gate == nil {
		missing = append(missing, "a gate rejection")
	}
	if t.Succeeded != t.Tasks-1 {
		missing = append(missing, "five successful tasks")
	}
	if len(missing) > 0 {
		return fmt.Errorf("demo: the run did not show %s (status %s)", strings.Join(missing, ", "), rep.Status)
	}
	return nil
}

func writeDemoSummary(e *env, rep *runs.Report, res demoResult) {
	by := map[string][]string{}
	for _, tr := range rep.Tasks {
		if tr.Integrated != nil {
			by[*tr.Integrated] = append(by[*tr.Integrated], tr.ID)
		}
	}
	fmt.Fprintln(e.stdout, "\nwhat happened:")
	fmt.Fprintf(e.stdout, "  fast-forward     %s (integrated while the branch was still at the task's base)\n", strings.Join(by[attempt.FastForward], ", "))
	fmt.Fprintf(e.stdout, "  three-way merge  %s (the branch had moved; their changes were disjoint)\n", strings.Join(by[attempt.Merge], ", "))
	fmt.Fprintf(e.stdout, "  reconciled       %s (README.md was changed on both sides; a reconciler combined them)\n", strings.Join(by[attempt.Reconciled], ", "))
	if tr := rep.Task("tidy-tests"); tr != nil && tr.Gate != nil {
		fmt.Fprintf(e.stdout, "  rejected         tidy-tests (gate %s/%s: %s)\n", tr.Gate.Gate, tr.Gate.Pattern, tr.Gate.Detail)
	}
	if res.Kept {
		fmt.Fprintf(e.stdout, "\nkept in %s (git -C %s log --graph --oneline; apiary status --repo %s)\n", res.Dir, res.Repo, res.Repo)
	}
}

// demoRead is the tool call with which a CLI of kind reads a file of its
// worktree first; nil for the CLIs whose scripts only write.
func demoRead(kind, path string) map[string]any {
	if kind != agent.KindClaude {
		return nil
	}
	return map[string]any{"name": "Read", "input": map[string]any{"file_path": "{{cwd}}/" + path}}
}

// demoWrite is the tool call with which a CLI of kind writes content to a
// file of its worktree: its own file tool, or Codex's shell.
func demoWrite(kind, path, content string) map[string]any {
	switch kind {
	case agent.KindCodex:
		cmd := fmt.Sprintf("mkdir -p %q && cat > %q <<'APIARY_EOF'\n%sAPIARY_EOF\n", filepath.Dir(path), path, content)
		return map[string]any{"name": "exec_command", "input": map[string]any{"cmd": cmd}}
	case agent.KindGemini:
		return map[string]any{"name": "write_file", "input": map[string]any{"file_path": "{{cwd}}/" + path, "content": content}}
	case agent.KindOpenCode:
		return map[string]any{"name": "write", "input": map[string]any{"filePath": "{{cwd}}/" + path, "content": content}}
	}
	return map[string]any{"name": "Write", "input": map[string]any{"file_path": "{{cwd}}/" + path, "content": content}}
}

// findAgentCLI returns given if set, else looks for the executable name as
// the tests do: in test/node_modules/.bin above the current directory,
// then on PATH ("" when it is nowhere).
func findAgentCLI(name, given string) string {
	if given != "" {
		return given
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			p := filepath.Join(d, "test", "node_modules", ".bin", name)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	p, _ := exec.LookPath(name)
	return p
}

// buildDemo creates the demo repository and the command agents' files.
func buildDemo(ctx context.Context, dir, repoDir string) error {
	files := map[string]string{"agents/run.sh": demoFile("agents/run.sh"), "agents/reconcile.sh": demoFile("agents/reconcile.sh")}
	for _, t := range demoTasks() {
		for p, c := range t.files {
			files[filepath.Join("content", t.id, p)] = c
		}
	}
	for p, c := range demoBase() {
		files[filepath.Join("repo", p)] = c
	}
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(c), 0o755); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, "git", "init", "--quiet", "--initial-branch=main", repoDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %v: %s", err, out)
	}
	sig := git.Signature{Name: "apiary demo", Email: "demo@apiary.invalid"}
	_, err := git.New(repoDir, git.Options{}).CommitAll(ctx, git.CommitOptions{Message: "calc: initial version\n", Author: sig})
	return err
}

// demoModels are the models the scripted CLIs ask for: any name works with
// llmfake; these keep each CLI on its plainest path (Codex's classic
// tools for a model outside its catalogue, Gemini CLI without its model
// router, opencode's Anthropic provider).
var demoModels = map[string]string{
	agent.KindClaude:   "claude-sonnet-4-5",
	agent.KindCodex:    "mock-codex",
	agent.KindGemini:   "gemini-2.5-flash",
	agent.KindOpenCode: "anthropic/claude-sonnet-4-5",
}

// demoPlan writes the plan; agents are a CLI of kind scripted through
// llmfake, or command agents.
func demoPlan(dir, kind string, hasGo bool) string {
	var b strings.Builder
	b.WriteString("version: 1\nintegration_branch: main\nmax_parallel: 5\nagents:\n")
	if model, ok := demoModels[kind]; ok {
		fmt.Fprintf(&b, "  worker: {kind: %s, model: %s}\n  reconciler: {kind: %s, model: %s}\n", kind, model, kind, model)
	} else {
		fmt.Fprintf(&b, "  worker: {kind: command, argv: [sh, %q]}\n", filepath.Join(dir, "agents", "run.sh"))
		fmt.Fprintf(&b, "  reconciler: {kind: command, argv: [sh, %q]}\n", filepath.Join(dir, "agents", "reconcile.sh"))
	}
	b.WriteString("tasks:\n")
	for _, t := range demoTasks() {
		check := t.check
		if !hasGo && t.fallback != "" {
			check = t.fallback
		}
		fmt.Fprintf(&b, "  - id: %s\n    objective: %q\n    agent: worker\n    write_scope: [%s]\n    checks: [%q]\n    estimate_s: %d\n    budget: {usd: 1, wall_clock_s: 300}\n",
			t.id, t.objective, strings.Join(t.scope, ", "), check, t.estimate)
		if len(t.deps) > 0 {
			fmt.Fprintf(&b, "    deps: [%s]\n", strings.Join(t.deps, ", "))
		}
	}
	return b.String()
}

// demoKey gives each task's Claude Code worker its own key, which selects
// its script in llmfake.
func demoKey(ref attempt.TaskRef) string {
	if ref.Role == attempt.RoleReconciler {
		return "demo-reconcile"
	}
	return "demo-" + ref.Task
}

// demoModelServer is llmfake with one script per task for workers of
// kind: read the files that exist, then write the task's files, each with
// the CLI's own tools.
func demoModelServer(kind string) (*llmfake.Server, error) {
	base := demoBase()
	type turn struct {
		Text      string           `json:"text"`
		ToolCalls []map[string]any `json:"tool_calls"`
	}
	script := func(name, key, final string, files map[string]string) map[string]any {
		paths := make([]string, 0, len(files))
		for p := range files {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		var reads, writes []map[string]any
		for _, p := range paths {
			if _, ok := base[p]; ok {
				if r := demoRead(kind, p); r != nil {
					reads = append(reads, r)
				}
			}
			writes = append(writes, demoWrite(kind, p, files[p]))
		}
		var turns []turn
		if len(reads) > 0 {
			turns = append(turns, turn{Text: "Let me read the current files.", ToolCalls: reads})
		}
		turns = append(turns, turn{Text: "Writing the change.", ToolCalls: writes})
		return map[string]any{"name": name, "match": map[string]any{"api_key": key}, "turns": turns, "final": final}
	}
	var scripts []map[string]any
	for _, t := range demoTasks() {
		scripts = append(scripts, script(t.id, "demo-"+t.id, "Done: "+t.objective, t.files))
	}
	scripts = append(scripts, script("reconcile", "demo-reconcile", "Combined both sections of README.md.",
		map[string]string{"README.md": demoReadme(demoUsage, demoContrib)}))
	doc, err := json.Marshal(map[string]any{"session_key": "session", "scripts": scripts})
	if err != nil {
		return nil, err
	}
	scs, err := llmfake.ParseScripts("demo", doc)
	if err != nil {
		return nil, err
	}
	return llmfake.New(llmfake.Config{Scripts: scs}, llmfake.Options{Seed: 1})
}
