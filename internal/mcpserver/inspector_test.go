//go:build unix

package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envtest"
)

// inspector runs the MCP Inspector CLI (@modelcontextprotocol/inspector,
// pinned in test/package.json) against the real `apiary mcp` over stdio and
// returns its stdout and exit code.
func inspector(t *testing.T, bin, ws string, args ...string) ([]byte, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	full := append([]string{"--cli", "-e", "RW_WORKSPACE=" + ws, apiaryBin, "mcp"}, args...)
	cmd := exec.CommandContext(ctx, bin, full...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything it left behind
	code := cmd.ProcessState.ExitCode()
	if err != nil && code <= 0 {
		t.Fatalf("inspector: %v\n%s", err, errb.String())
	}
	return out.Bytes(), code
}

// TestInspector: the MCP Inspector CLI lists our tools and calls
// rw.safe_write; a refused write comes back with isError and our envelope.
func TestInspector(t *testing.T) {
	t.Parallel()
	bin := envtest.NodeBin(t, "mcp-inspector")
	ws := workspaceDir(t)

	out, code := inspector(t, bin, ws, "--method", "tools/list")
	var list struct {
		Tools []struct {
			Name         string         `json:"name"`
			OutputSchema map[string]any `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(out, &list); err != nil || code != 0 {
		t.Fatalf("tools/list (exit %d): %v\n%s", code, err, out)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if len(names) != 27 || !slices.Contains(names, "rw.safe_write") || !slices.Contains(names, "rw.checkpoint_cleanup") {
		t.Fatalf("tools %v", names)
	}

	out, code = inspector(t, bin, ws, "--method", "tools/call", "--tool-name", "rw.safe_write",
		"--tool-arg", "path=notes/inspector.txt", "--tool-arg", "content=written by the inspector")
	var res struct {
		Structured map[string]any `json:"structuredContent"`
		IsError    bool           `json:"isError"`
	}
	if err := json.Unmarshal(out, &res); err != nil || code != 0 || res.IsError || res.Structured["ok"] != true {
		t.Fatalf("tools/call (exit %d): %v\n%s", code, err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes/inspector.txt")); string(b) != "written by the inspector" {
		t.Fatalf("file %q", b)
	}

	out, code = inspector(t, bin, ws, "--method", "tools/call", "--tool-name", "rw.safe_write",
		"--tool-arg", "path=../escape.txt", "--tool-arg", "content=x")
	var refused struct {
		Structured map[string]any `json:"structuredContent"`
		IsError    bool           `json:"isError"`
	}
	// The Inspector prints the result, then its own error line.
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&refused); err != nil || code == 0 || !refused.IsError {
		t.Fatalf("refused call (exit %d): %v\n%s", code, err, out)
	}
	checkEnvelope(t, "rw.safe_write", refused.Structured)
}
