//go:build unix

package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// claudeTool is the name Claude Code gives rw.safe_write of the MCP server
// configured as "durable" (see the package doc).
const claudeTool = "mcp__durable__rw_safe_write"

// claudeScript drives Claude Code: write a file through our tool; if that
// succeeded, write outside the root; then report whether the refusal came
// back as a tool error carrying our envelope.
const claudeScript = `
session_key: session
scripts:
  - name: durable
    match: {user: "durable write test"}
    turns:
      - text: "Writing through the durable server."
        tool_calls:
          - name: ` + claudeTool + `
            input: {path: "claude/ok.txt", content: "written by claude code\n"}
      - text: "FIRST_WRITE_FAILED"
        branches:
          - when: {is_error: false, contains: '"ok":true'}
            text: "Now a write outside the root."
            tool_calls:
              - name: ` + claudeTool + `
                input: {path: "../outside.txt", content: "must not land"}
      - text: "ENVELOPE_MISSING"
        branches:
          - when: {is_error: true, regex: '(?s)escapes_workspace.*"error":\s*"policy_violation".*"ok":\s*false.*"reason_hint":\s*"permission".*"schema_version":\s*"1"'}
            text: "ENVELOPE_OK"
    final: "Done."
`

// TestClaudeCode runs the real Claude Code CLI, driven by an llmfake
// script, with our server as its only MCP server: the file lands through
// mcp__durable__rw_safe_write, and a write outside the root comes back to
// Claude Code as a tool error whose content is our envelope.
func TestClaudeCode(t *testing.T) {
	t.Parallel()
	claude := envtest.Claude(t)
	scripts, err := llmfake.ParseScripts("claude.yaml", []byte(claudeScript))
	if err != nil {
		t.Fatal(err)
	}
	fake, err := llmfake.New(llmfake.Config{Scripts: scripts}, llmfake.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := llmfake.Serve(ln, fake)
	t.Cleanup(func() { hs.Close() })

	ws := workspaceDir(t)
	home := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"durable": map[string]any{
		"type": "stdio", "command": apiaryBin, "args": []string{"mcp", "--root", ws},
	}}})
	cfgPath := filepath.Join(home, "mcp.json")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Please run the durable write test.", "--output-format", "json",
		"--mcp-config", cfgPath, "--strict-mcp-config", "--allowedTools", claudeTool)
	cmd.Dir = ws
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"ANTHROPIC_BASE_URL=" + hs.URL, "ANTHROPIC_API_KEY=llmfake-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) }) // MCP servers Claude Code leaves behind
	if err := cmd.Wait(); err != nil {
		t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var res struct {
		Subtype string `json:"subtype"`
		IsError bool   `json:"is_error"`
		Result  string `json:"result"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("result JSON: %v\n%s", err, stdout.String())
	}
	got, err := os.ReadFile(filepath.Join(ws, "claude/ok.txt"))
	if err != nil || string(got) != "written by claude code\n" {
		t.Fatalf("the file did not land (%v, %q); Claude Code said %+v", err, got, res)
	}
	if res.Result != "ENVELOPE_OK" {
		t.Fatalf("the refused write did not come back as a tool error with our envelope: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ws), "outside.txt")); err == nil {
		t.Fatal("the write outside the root landed")
	}
}
