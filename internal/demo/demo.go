package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/apiary-dev/apiary/internal/runs"
)

// Delay is how long each agent of a slow demo takes at least.
const Delay = 3 * time.Second

// Build creates, under dir, the command agents' scripts and the files
// each task's agent writes, and at repoDir the git repository the demo
// starts from (one commit on main).
func Build(ctx context.Context, dir, repoDir string) error {
	out := map[string]string{"agents/run.sh": file("agents/run.sh"), "agents/reconcile.sh": file("agents/reconcile.sh")}
	for _, t := range tasks() {
		for p, c := range t.files {
			out[filepath.Join("content", t.id, p)] = c
		}
	}
	for p, c := range base() {
		out[filepath.Join("repo", p)] = c
	}
	for p, c := range out {
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

// Model is the model a scripted CLI of kind asks for ("" for command
// agents). Any name works with llmfake; these keep each CLI on its
// plainest path (Codex's classic tools for a model outside its catalogue,
// Gemini CLI without its model router, opencode's Anthropic provider).
func Model(kind string) string {
	switch kind {
	case agent.KindClaude:
		return "claude-sonnet-4-5"
	case agent.KindCodex:
		return "mock-codex"
	case agent.KindGemini:
		return "gemini-2.5-flash"
	case agent.KindOpenCode:
		return "anthropic/claude-sonnet-4-5"
	}
	return ""
}

// Plan is the demo's plan for the files Build wrote under dir: its agents
// are a CLI of kind scripted through llmfake (see ModelServer), or, for
// kind "command", the shell scripts, each taking at least delay. Checks
// run go test when hasGo, else grep.
func Plan(dir, kind string, hasGo bool, delay time.Duration) string {
	var b strings.Builder
	b.WriteString("version: 1\nintegration_branch: main\nmax_parallel: 5\nagents:\n")
	if model := Model(kind); model != "" {
		fmt.Fprintf(&b, "  worker: {kind: %s, model: %s}\n  reconciler: {kind: %s, model: %s}\n", kind, model, kind, model)
	} else {
		env := fmt.Sprintf("{APIARY_DEMO_DELAY: \"%d\"}", int(delay.Seconds()))
		fmt.Fprintf(&b, "  worker: {kind: command, argv: [sh, %q], env: %s}\n", filepath.Join(dir, "agents", "run.sh"), env)
		fmt.Fprintf(&b, "  reconciler: {kind: command, argv: [sh, %q], env: %s}\n", filepath.Join(dir, "agents", "reconcile.sh"), env)
	}
	b.WriteString("tasks:\n")
	for _, t := range tasks() {
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

// Key gives each task's scripted worker its own API key, which selects its
// script in the ModelServer.
func Key(ref attempt.TaskRef) string {
	if ref.Role == attempt.RoleReconciler {
		return "demo-reconcile"
	}
	return "demo-" + ref.Task
}

// ModelServer is llmfake with one script per task for workers of kind:
// read the files that exist, then write the task's files, each with the
// CLI's own tools. With a delay every answer waits that long.
func ModelServer(kind string, delay time.Duration) (*llmfake.Server, error) {
	start := base()
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
			if _, ok := start[p]; ok {
				if r := readCall(kind, p); r != nil {
					reads = append(reads, r)
				}
			}
			writes = append(writes, writeCall(kind, p, files[p]))
		}
		var turns []turn
		if len(reads) > 0 {
			turns = append(turns, turn{Text: "Let me read the current files.", ToolCalls: reads})
		}
		turns = append(turns, turn{Text: "Writing the change.", ToolCalls: writes})
		return map[string]any{"name": name, "match": map[string]any{"api_key": key}, "turns": turns, "final": final}
	}
	var scripts []map[string]any
	for _, t := range tasks() {
		scripts = append(scripts, script(t.id, "demo-"+t.id, "Done: "+t.objective, t.files))
	}
	scripts = append(scripts, script("reconcile", "demo-reconcile", "Combined both sections of README.md.",
		map[string]string{"README.md": readme(usage, contrib)}))
	doc, err := json.Marshal(map[string]any{"session_key": "session", "scripts": scripts})
	if err != nil {
		return nil, err
	}
	scs, err := llmfake.ParseScripts("demo", doc)
	if err != nil {
		return nil, err
	}
	return llmfake.New(llmfake.Config{Scripts: scs, Faults: llmfake.Faults{Latency: delay / 2}}, llmfake.Options{Seed: 1})
}

// readCall is the tool call with which a CLI of kind reads a file of its
// worktree first; nil for the CLIs whose scripts only write.
func readCall(kind, path string) map[string]any {
	if kind != agent.KindClaude {
		return nil
	}
	return map[string]any{"name": "Read", "input": map[string]any{"file_path": "{{cwd}}/" + path}}
}

// writeCall is the tool call with which a CLI of kind writes content to a
// file of its worktree: its own file tool, or Codex's shell.
func writeCall(kind, path, content string) map[string]any {
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

// Shown checks that the run showed what the demo promises: a three-way
// merge, a reconciliation, a gate rejection and five successful tasks.
func Shown(rep *runs.Report) error {
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

// WriteSummary says what happened to each task of rep and, when the demo
// is kept in dir, where its repository is.
func WriteSummary(w io.Writer, rep *runs.Report, dir, repo string, kept bool) {
	by := map[string][]string{}
	for _, tr := range rep.Tasks {
		if tr.Integrated != nil {
			by[*tr.Integrated] = append(by[*tr.Integrated], tr.ID)
		}
	}
	fmt.Fprintln(w, "\nwhat happened:")
	fmt.Fprintf(w, "  fast-forward     %s (integrated while the branch was still at the task's base)\n", strings.Join(by[attempt.FastForward], ", "))
	fmt.Fprintf(w, "  three-way merge  %s (the branch had moved; their changes were disjoint)\n", strings.Join(by[attempt.Merge], ", "))
	fmt.Fprintf(w, "  reconciled       %s (README.md was changed on both sides; a reconciler combined them)\n", strings.Join(by[attempt.Reconciled], ", "))
	if tr := rep.Task("tidy-tests"); tr != nil && tr.Gate != nil {
		fmt.Fprintf(w, "  rejected         tidy-tests (gate %s/%s: %s)\n", tr.Gate.Gate, tr.Gate.Pattern, tr.Gate.Detail)
	}
	if kept {
		fmt.Fprintf(w, "\nkept in %s (git -C %s log --graph --oneline; apiary status --repo %s)\n", dir, repo, repo)
	}
}
