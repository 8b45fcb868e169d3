package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/apiary-dev/apiary/internal/durable"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/mcpserver"
	"github.com/apiary-dev/apiary/internal/runs"
)

// spawnParent hands the test what `apiary mcp` gets in an agent's
// worktree (its capability, control socket and base), then waits.
const spawnParent = `set -e
printf %s "$APIARY_CAPABILITY" > "$FLAGS/cap.tmp" && mv "$FLAGS/cap.tmp" "$FLAGS/cap"
while [ ! -e "$FLAGS/go" ]; do sleep 0.02; done
mkdir -p p && echo parent > p/done
`

// TestMCPSpawn drives the apiary.spawn MCP tool as an agent's `apiary mcp`
// serves it — the MCP server wired, as cli wires it, to the live run's
// control socket with the agent's capability: a child inside the parent's
// authority runs and its receipt comes back; one outside it is refused
// with a typed permission error; the child's work lands on the branch.
func TestMCPSpawn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	repoDir, flags := filepath.Join(dir, "repo"), filepath.Join(dir, "flags")
	gitInit(t, repoDir)
	if err := os.Mkdir(flags, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "parent.sh")
	if err := os.WriteFile(script, []byte(spawnParent), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := `version: 1
agents:
  sh: {kind: command, argv: [sh, "` + script + `"], env: {FLAGS: "` + flags + `"}}
  kid: {kind: command, argv: [sh, -c, "mkdir -p p/c && echo child > p/c/out"]}
tasks:
  - {id: p, objective: parent, agent: sh, write_scope: [p/]}
`
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	repo := git.New(repoDir, git.Options{Env: append(os.Environ(), testGitEnv...)})
	id := "mcp-spawn"
	type out struct {
		rep *runs.Report
		err error
	}
	done := make(chan out, 1)
	go func() {
		rep, err := runs.Start(ctx, runs.Config{Repo: repo}, runs.NewRun{ID: id, PlanFile: "plan.yaml", PlanData: []byte(plan)})
		done <- out{rep, err}
	}()
	t.Cleanup(func() { cancel(); <-done })
	var capTok []byte
	for capTok == nil {
		if ctx.Err() != nil {
			t.Fatal("the parent agent never started")
		}
		capTok, _ = os.ReadFile(filepath.Join(flags, "cap"))
		time.Sleep(20 * time.Millisecond)
	}

	ws, err := durable.Open(ctx, durable.Config{Roots: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	sp := runs.AgentSpawner{Control: runs.DialControl(runs.ControlPath(repoDir, id)), Capability: string(capTok)}
	srv := mcpserver.New(ws, mcpserver.Options{Spawner: sp})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	head := strings.TrimSpace(gitOut(t, repoDir, "rev-parse", "main"))
	spawn := func(name, scope string) (map[string]any, bool) {
		t.Helper()
		env := map[string]any{"task_id": "0190a1b2-c3d4-7e5f-8a6b-0c1d2e3f4a5b", "name": name, "objective": "child " + name,
			"inputs": map[string]any{"workspace": "git:" + head}, "authority": map[string]any{"write_scope": []string{scope}},
			"budget": map[string]any{}, "completion": map[string]any{}, "deps": []any{}, "agent": map[string]any{"profile": "kid"}}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.SpawnTool, Arguments: map[string]any{"envelope": env, "wait": true}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &m); err != nil {
			t.Fatal(err)
		}
		return m, res.IsError
	}
	m, isErr := spawn("c", "p/c/")
	rc, _ := m["receipt"].(map[string]any)
	if isErr || m["task"] != "c" || m["depth"] != float64(1) || rc["status"] != "succeeded" {
		t.Errorf("spawn inside the parent's authority: error %v, %v", isErr, m)
	}
	m, isErr = spawn("wide", "q/")
	ectx, _ := m["context"].(map[string]any)
	if !isErr || ectx["reason"] != runs.KindPermission {
		t.Errorf("spawn beyond the parent's authority: error %v, %v", isErr, m)
	}

	if err := os.WriteFile(filepath.Join(flags, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-done
	done <- res // for the cleanup
	if res.err != nil || !res.rep.OK() {
		t.Fatalf("run: %v %+v", res.err, res.rep)
	}
	if got := gitOut(t, repoDir, "show", res.rep.IntegrationBranch+":p/c/out"); got != "child\n" {
		t.Errorf("the child's work on the branch: %q", got)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Error("the run took too long")
	}
}

// gitOut runs git in dir and returns its output.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), testGitEnv...)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(b)
}
