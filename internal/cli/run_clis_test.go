package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/demo"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/llmfake"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// mcpToolNames is rw.safe_write of the run's MCP server ("apiary") as
// each CLI names it.
var mcpToolNames = map[string]string{
	agent.KindClaude:   "mcp__apiary__rw_safe_write",
	agent.KindCodex:    "mcp__apiary__rw_safe_write",
	agent.KindGemini:   "mcp_apiary_rw.safe_write",
	agent.KindOpenCode: "apiary_rw_safe_write",
}

// TestRunWorkersWriteThroughMCP runs one `apiary run` whose four tasks
// are worked by Claude Code, Codex, Gemini CLI and opencode, each scripted
// to write its file with rw.safe_write of the durable MCP server the run
// gives every attempt (with the attempt's capability) and nothing else:
// every file is integrated byte for byte, and every task's usage is what
// the run's gateway metered for its key.
func TestRunWorkersWriteThroughMCP(t *testing.T) {
	t.Parallel()
	envtest.Command(t, "git")
	kinds := []string{agent.KindClaude, agent.KindCodex, agent.KindGemini, agent.KindOpenCode}
	bins := map[string]string{}
	for _, k := range kinds {
		f, _ := agent.FactsOf(k)
		bins[k] = envtest.NodeBin(t, f.Bin)
	}
	content := func(kind string) string {
		return fmt.Sprintf("durable from %s\n  \"quoted\" — ünïcode ✓\nend", kind)
	}
	var script, planDoc strings.Builder
	script.WriteString("session_key: round-robin\nscripts:\n")
	planDoc.WriteString("version: 1\nmax_parallel: 4\nagents:\n")
	for _, k := range kinds {
		fmt.Fprintf(&script, "  - name: %[1]s\n    match: {user: \"[mcp %[1]s]\"}\n    turns:\n      - text: \"Writing durably.\"\n        tool_calls: [{name: %[2]q, input: {path: notes/%[1]s.txt, content: %[3]q}}]\n    final: \"Wrote notes/%[1]s.txt.\"\n",
			k, mcpToolNames[k], content(k))
		fmt.Fprintf(&planDoc, "  %[1]s-w: {kind: %[1]s, model: %[2]s}\n", k, demo.Model(k))
	}
	planDoc.WriteString("tasks:\n")
	for _, k := range kinds {
		fmt.Fprintf(&planDoc, "  - {id: %[1]s, objective: \"Write notes/%[1]s.txt with rw.safe_write [mcp %[1]s]\", agent: %[1]s-w, write_scope: [notes/%[1]s.txt], budget: {wall_clock_s: 240}}\n", k)
	}
	scs, err := llmfake.ParseScripts("mcp", []byte(script.String()))
	if err != nil {
		t.Fatal(err)
	}
	fake, err := llmfake.ServeLoopback(llmfake.Config{Scripts: scs}, llmfake.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()

	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	planPath := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(planPath, []byte(planDoc.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", planPath, "--repo", repo.Dir(), "--model-url", fake.URL, "--json"}
	for _, k := range kinds {
		args = append(args, "--agent-bin", k+"="+bins[k])
	}
	vars := map[string]string{"APIARY_MODEL_KEY": "sk-upstream-real", "PATH": os.Getenv("PATH"),
		"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
	var stdout, stderr bytes.Buffer
	e := &env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return vars[k] }}
	if err := rootCommand().Execute(t.Context(), e, "apiary", args); err != nil && err != errSilent {
		t.Fatalf("apiary run: %v\n%s", err, stderr.String())
	}
	ids, err := rundir.List(repo.Dir())
	if err != nil || len(ids) != 1 {
		t.Fatalf("runs %v %v\n%s", ids, err, stderr.String())
	}
	rep, err := runs.LoadReport(repo.Dir(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		tr := rep.Task(k)
		if tr == nil || tr.Status != "succeeded" {
			t.Errorf("%s: %+v\n%s", k, tr, stderr.String())
			continue
		}
		if got := gittest.Show(t, repo, "main", "notes/"+k+".txt"); got != content(k) {
			t.Errorf("%s: main:notes/%s.txt = %q", k, k, got)
		}
		t.Logf("%s: %s, %d/%d tokens", k, tr.Status, tr.Usage.InputTokens, tr.Usage.OutputTokens)
		if tr.Usage.InputTokens == 0 || tr.Usage.OutputTokens == 0 {
			t.Errorf("%s: no metered usage: %+v", k, tr.Usage)
		}
	}
}
