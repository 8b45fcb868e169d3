package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCommandEnvAllowlist(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-parent-secret")
	t.Setenv("CLAUDECODE", "1")
	s := Spec{Profile: Profile{Name: "cc", Kind: KindClaude, Model: "claude-sonnet-4-5"}, Dir: "/wt", Prompt: "do it",
		Home: "/h", BaseURL: "http://127.0.0.1:7420", APIKey: "apiary-vk-x", MCPConfig: "/m.json",
		AllowedTools: []string{"mcp__apiary__rw_safe_write"}, MaxBudgetUSD: 1.5, TaskID: "t1"}
	argv, env, err := s.Command("/usr/bin:/bin")
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(argv, " ")
	for _, want := range []string{"claude -p do it", "--output-format stream-json", "--permission-mode acceptEdits",
		"--model claude-sonnet-4-5", "--max-budget-usd 1.5", "--mcp-config /m.json --strict-mcp-config", "mcp__apiary__rw_safe_write"} {
		if !strings.Contains(joined, want) {
			t.Errorf("argv %q lacks %q", joined, want)
		}
	}
	if slices.Contains(argv, "--dangerously-skip-permissions") {
		t.Error("argv must never skip permissions")
	}
	envs := strings.Join(env, "\n")
	if strings.Contains(envs, "sk-parent-secret") || strings.Contains(envs, "CLAUDECODE") {
		t.Errorf("parent credentials leaked into the agent environment:\n%s", envs)
	}
	for _, want := range []string{"ANTHROPIC_API_KEY=apiary-vk-x", "ANTHROPIC_BASE_URL=http://127.0.0.1:7420", "HOME=/h",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "APIARY_TASK_ID=t1"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s", want)
		}
	}
}

func TestProfileValidate(t *testing.T) {
	t.Parallel()
	for _, p := range []Profile{{Name: "x"}, {Name: "y", Kind: "cursor"}, {Name: "z", Kind: KindCommand}} {
		if err := p.Validate(); err == nil {
			t.Errorf("profile %+v validated", p)
		}
	}
	if _, ok := Builtin("claude"); !ok {
		t.Error("no builtin claude profile")
	}
}

func TestRunCommandAgent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := Spec{Profile: Profile{Name: "sh", Kind: KindCommand, Argv: []string{"sh", "-c", `printf '%s\n' "$APIARY_TASK_ID" > out.txt; echo to-log; exit 3`}},
		Dir: dir, Home: filepath.Join(dir, "home"), Log: filepath.Join(dir, "log", "agent.log"), TaskID: "task-7"}
	res, err := Run(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != 3 || res.Cancelled {
		t.Errorf("result %+v, want exit 3", res)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "task-7\n" {
		t.Errorf("out.txt = %q", b)
	}
	if b, _ := os.ReadFile(s.Log); !strings.Contains(string(b), "to-log") {
		t.Errorf("log = %q", b)
	}
}

// TestRunCancelKillsGroup starts an agent whose children ignore SIGTERM and
// detach into the background; cancelling must leave no process of the group.
func TestRunCancelKillsGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := `trap '' TERM; (trap '' TERM; sleep 300) & (sleep 300 &) ; echo $$ > pid; wait`
	s := Spec{Profile: Profile{Name: "sh", Kind: KindCommand, Argv: []string{"sh", "-c", script}},
		Dir: dir, Home: filepath.Join(dir, "home"), Log: filepath.Join(dir, "log"), Grace: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan Result, 1)
	go func() {
		res, err := Run(ctx, s)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	var pid int
	for pid == 0 {
		b, _ := os.ReadFile(filepath.Join(dir, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if pid == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	cancel()
	res := <-done
	if !res.Cancelled {
		t.Errorf("result %+v not marked cancelled", res)
	}
	if left := groupMembers(t, pid); len(left) > 0 {
		t.Fatalf("processes left in group %d after cancel: %v", pid, left)
	}
}

// TestRunSweepsAfterExit: the leader exits normally but leaves a background
// child; the sweep kills it.
func TestRunSweepsAfterExit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := Spec{Profile: Profile{Name: "sh", Kind: KindCommand, Argv: []string{"sh", "-c", `sleep 300 >/dev/null 2>&1 & echo $$ > pid`}},
		Dir: dir, Home: filepath.Join(dir, "home"), Log: filepath.Join(dir, "log")}
	if _, err := Run(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 {
		t.Fatal("no pid")
	}
	if left := groupMembers(t, pid); len(left) > 0 {
		t.Fatalf("orphans left in group %d: %v", pid, left)
	}
}

// groupMembers lists live (non-zombie) processes whose process group is pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	var out []int
	deadline := time.Now().Add(2 * time.Second)
	for {
		out = out[:0]
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			// Fields after the command name: state ppid pgrp ...
			s := string(b)
			f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
			if len(f) > 2 && f[0] != "Z" {
				if g, _ := strconv.Atoi(f[2]); g == pgid {
					out = append(out, pid)
				}
			}
		}
		// Reaping by init can lag a moment after SIGKILL.
		if len(out) == 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestReportParserNoResult(t *testing.T) {
	t.Parallel()
	p := newReportParser(KindClaude)
	p.line([]byte(`{"type":"assistant"}`))
	p.line([]byte(`not json`))
	if p.report() != nil {
		t.Error("a run without a result event must have no report")
	}
	if newReportParser(KindAider).report() != nil || newReportParser(KindCommand).report() != nil {
		t.Error("kinds that print no report must have none")
	}
}
