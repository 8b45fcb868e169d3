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

The workers are real Claude Code processes scripted through llmfake,
apiary's fake model server, started in-process (no key, no cost) when the
claude CLI is found (test/node_modules/.bin/claude above the current
directory, or claude on PATH); otherwise they are command agents that write
the same files. Checks run "go test ./..." when go is on PATH (see --checks).

The repository is removed afterwards unless --keep (or --dir) is given.`,
		setup: func(fs *flag.FlagSet) runFunc {
			o := demoOptions{}
			fs.BoolVar(&o.json, "json", false, "print the report as JSON (with the demo's directory)")
			fs.BoolVar(&o.keep, "keep", false, "keep the demo repository and print where it is")
			fs.StringVar(&o.agent, "agent", "auto", "worker `KIND`: claude, command, or auto (claude when found)")
			fs.StringVar(&o.claude, "claude", "", "the Claude Code executable `PATH` (default: looked up)")
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
	json, keep                 bool
	agent, claude, dir, checks string
}

// demoResult is the demo's JSON output.
type demoResult struct {
	Dir    string       `json:"dir"`
	Repo   string       `json:"repo"`
	Agents string       `json:"agents"` // claude | command
	Checks string       `json:"checks"` // go test | grep
	Kept   bool         `json:"kept"`
	Report *runs.Report `json:"report"`
}

func (o *demoOptions) run(ctx context.Context, e *env) error {
	claude := ""
	switch o.agent {
	case "command":
	case "claude", "auto":
		claude = o.claude
		if claude == "" {
			claude = findClaude()
		}
		if claude == "" && o.agent == "claude" {
			return errors.New("demo: the claude CLI was not found (install it, or pass --claude PATH or --agent command)")
		}
	default:
		return usagef("--agent must be claude, command or auto, got %q", o.agent)
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
	if claude != "" {
		res.Agents = "claude"
	}
	if err := buildDemo(ctx, dir, res.Repo); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	planData := demoPlan(dir, res.Agents == "claude", goErr == nil)
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(planData), 0o644); err != nil {
		return err
	}
	cfg := runs.Config{Repo: git.New(res.Repo, git.Options{}), ReconcileAgent: "reconciler"}
	if claude != "" {
		srv, err := demoModelServer()
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
		cfg.AgentBin = map[string]string{"claude": claude}
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

// findClaude looks for the Claude Code CLI as the tests do: in
// test/node_modules/.bin above the current directory, then on PATH.
func findClaude() string {
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			p := filepath.Join(d, "test", "node_modules", ".bin", "claude")
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	p, _ := exec.LookPath("claude")
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

// demoPlan writes the plan; agents are Claude Code scripted through
// llmfake, or command agents.
func demoPlan(dir string, claude, hasGo bool) string {
	var b strings.Builder
	b.WriteString("version: 1\nintegration_branch: main\nmax_parallel: 5\nagents:\n")
	if claude {
		b.WriteString("  worker: {kind: claude, model: claude-sonnet-4-5}\n  reconciler: {kind: claude, model: claude-sonnet-4-5}\n")
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

// demoModelServer is llmfake with one script per task: Read the files that
// exist, then Write the task's files.
func demoModelServer() (*llmfake.Server, error) {
	base := demoBase()
	type call struct {
		Name  string         `json:"name"`
		Input map[string]any `json:"input"`
	}
	type turn struct {
		Text      string `json:"text"`
		ToolCalls []call `json:"tool_calls"`
	}
	script := func(name, key, final string, files map[string]string) map[string]any {
		paths := make([]string, 0, len(files))
		for p := range files {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		var reads, writes []call
		for _, p := range paths {
			if _, ok := base[p]; ok {
				reads = append(reads, call{Name: "Read", Input: map[string]any{"file_path": "{{cwd}}/" + p}})
			}
			writes = append(writes, call{Name: "Write", Input: map[string]any{"file_path": "{{cwd}}/" + p, "content": files[p]}})
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
