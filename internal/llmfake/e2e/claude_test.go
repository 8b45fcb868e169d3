//go:build unix

package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// The content has several lines, a quote and non-ASCII text so that every
// layer (YAML, JSON, SSE partial_json, the Write tool) must keep it exact.
const claudeFile = "first line\n  \"quoted\" — ünïcode ✓\nlast line without newline"

const claudeScript = `
session_key: session
scripts:
  - name: writer
    match: {user: "write the greeting"}
    turns:
      - text: "I'll create the file now."
        tool_calls:
          - name: Write
            input:
              file_path: "{{cwd}}/greeting.txt"
              content: "first line\n  \"quoted\" — ünïcode ✓\nlast line without newline"
      - text: "Checking the result."
        branches:
          - when: {is_error: true}
            text: "The write failed."
            goto: end
    final: "Wrote greeting.txt."
`

// TestClaudeCodeWritesFile runs the real Claude Code CLI against llmfake: a
// script makes it call its Write tool, and the file must hold exactly the
// scripted bytes.
func TestClaudeCodeWritesFile(t *testing.T) {
	t.Parallel()
	claude := envtest.Claude(t)
	s := newServer(t, llmfake.Config{Scripts: scripted(t, claudeScript)})
	hs := startHTTP(t, s)

	home, work := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Please write the greeting file.", "--output-format", "json",
		"--permission-mode", "acceptEdits", "--allowedTools", "Write")
	cmd.Dir = work
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"ANTHROPIC_BASE_URL=" + hs.URL,
		"ANTHROPIC_API_KEY=llmfake-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
	cmd.Stdin = nil // /dev/null: stdin closed
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) }) // children it left behind
	if err := cmd.Wait(); err != nil {
		t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}

	var res struct {
		Type    string `json:"type"`
		Subtype string `json:"subtype"`
		IsError bool   `json:"is_error"`
		Result  string `json:"result"`
		Usage   struct {
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("result JSON: %v\n%s", err, stdout.String())
	}
	if res.Type != "result" || res.Subtype != "success" || res.IsError || res.Result != "Checking the result." {
		t.Errorf("result %+v", res)
	}
	got, err := os.ReadFile(filepath.Join(work, "greeting.txt"))
	if err != nil {
		t.Fatalf("the file was not written: %v\nstdout: %s", err, stdout.String())
	}
	if string(got) != claudeFile {
		t.Errorf("file bytes %q, want %q", got, claudeFile)
	}
	st := s.Stats().Total
	if st.ByStatus["200"] < 2 || st.TokensOut == 0 {
		t.Errorf("server saw %+v", st)
	}
}
