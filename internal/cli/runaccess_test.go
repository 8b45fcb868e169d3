package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/access"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/llmfake"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// TestRunThroughGateway runs a one-task plan with a real Claude Code worker
// scripted through llmfake: the run's in-process gateway gives the attempt
// its own virtual key, llmfake sees only the real key, and the task's usage
// in the report is the gateway ledger's for that key.
func TestRunThroughGateway(t *testing.T) {
	t.Parallel()
	claude := envtest.Claude(t)
	envtestGit(t)
	ctx := t.Context()
	const realKey = "sk-run-real-key"
	doc := `{"session_key": "session", "scripts": [{"name": "hello", "match": {"api_key": "` + realKey + `"},
	  "turns": [{"text": "Writing it.", "tool_calls": [{"name": "Write", "input": {"file_path": "{{cwd}}/hello.txt", "content": "hello through the gateway\n"}}]}],
	  "final": "Wrote hello.txt."}]}`
	scs, err := llmfake.ParseScripts("hello", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	fake, err := llmfake.New(llmfake.Config{Scripts: scs}, llmfake.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fsrv := llmfake.Serve(l, fake)
	t.Cleanup(func() { fsrv.Close() })

	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	if out, err := exec.CommandContext(ctx, "git", "init", "--quiet", "--initial-branch=main", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := git.New(repo, git.Options{}).CommitAll(ctx, git.CommitOptions{Message: "initial\n", Author: git.Signature{Name: "t", Email: "t@apiary.invalid"}}); err != nil {
		t.Fatal(err)
	}
	if err := rundir.Init(repo); err != nil {
		t.Fatal(err)
	}
	plan := "version: 1\nintegration_branch: main\nagents:\n  cc: {kind: claude, model: claude-sonnet-4-5}\ntasks:\n" +
		"  - id: hello\n    objective: \"Write hello.txt.\"\n    agent: cc\n    write_scope: [hello.txt]\n    checks: [\"test -f hello.txt\"]\n    budget: {usd: 5, wall_clock_s: 300}\n"
	planPath := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(planPath, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr lockedBuffer
	vars := map[string]string{"ANTHROPIC_BASE_URL": fsrv.URL, "APIARY_MODEL_KEY": realKey}
	if err := cliRun(ctx, vars, &stdout, &stderr, "run", "--json", "--repo", repo, "--agent-bin", "claude="+claude, planPath); err != nil {
		t.Fatalf("run: %v\n%s\n%s\nagent logs:\n%s", err, stdout.String(), stderr.String(), agentLogs(repo))
	}
	var rep runs.Report
	if err := json.Unmarshal([]byte(stdout.String()[strings.Index(stdout.String(), "{"):]), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	if len(rep.Tasks) != 1 || rep.Tasks[0].Status != "succeeded" {
		t.Fatalf("tasks %+v\n%s", rep.Tasks, stderr.String())
	}
	if got := gitOut(t, repo, "show", "main:hello.txt"); got != "hello through the gateway\n" {
		t.Errorf("hello.txt on main = %q", got)
	}

	// llmfake saw only the real key: the virtual key stayed between the
	// agent and the gateway.
	st := fake.Stats()
	if ks, ok := st.Keys[realKey]; len(st.Keys) != 1 || !ok || ks.Requests == 0 {
		t.Errorf("llmfake saw keys %v, want only %s", keysOf(st.Keys), realKey)
	}
	// The task's usage is the ledger's for its key.
	db, err := gateway.OpenDB(access.RunLedger(repo))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	keys, err := gateway.ListKeys(ctx, db)
	if err != nil || len(keys) != 1 || !strings.HasSuffix(keys[0].Agent, "/hello/a1") || keys[0].BudgetMicro != 5_000_000 {
		t.Fatalf("virtual keys %+v, %v", keys, err)
	}
	// The attempt is over: its key no longer works.
	if !keys[0].Revoked {
		t.Errorf("the finished attempt's key %s is not revoked", keys[0].ID)
	}
	u, err := gateway.UsageOfKey(ctx, db, keys[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	tu := rep.Tasks[0].Usage
	if u.Requests == 0 || tu.InputTokens != u.InputTokens || tu.OutputTokens != u.OutputTokens {
		t.Errorf("task usage %+v, ledger %+v", tu, u)
	}
}

func keysOf(m map[string]llmfake.KeyStats) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// agentLogs returns the agents' logs of every run in repo, for failures.
func agentLogs(repo string) string {
	var b strings.Builder
	logs, _ := filepath.Glob(rundir.State(repo, "runs", "*", "tasks", "*", "*.log"))
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		fmt.Fprintf(&b, "== %s\n%s\n", l, data)
	}
	return b.String()
}
