//go:build unix

package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// sessionScript makes each session write five files, one per turn, so
// eleven sessions send about 66 requests: more than the 60 a window allows.
const sessionScript = `
session_key: session
scripts:
  - name: writer
    turns:
      - {text: "Part 1.", tool_calls: [{name: Write, input: {file_path: "{{cwd}}/p1.txt", content: "1"}}]}
      - {text: "Part 2.", tool_calls: [{name: Write, input: {file_path: "{{cwd}}/p2.txt", content: "2"}}]}
      - {text: "Part 3.", tool_calls: [{name: Write, input: {file_path: "{{cwd}}/p3.txt", content: "3"}}]}
      - {text: "Part 4.", tool_calls: [{name: Write, input: {file_path: "{{cwd}}/p4.txt", content: "4"}}]}
      - text: "Writing the note."
        tool_calls:
          - name: Write
            input:
              file_path: "{{cwd}}/note.txt"
              content: "done\n"
    final: "Wrote note.txt."
`

// claudeOutcome is how one real Claude Code session ended.
type claudeOutcome struct {
	ok     bool
	detail string
}

// runClaude runs one real `claude -p` session against baseURL in a fresh
// directory; it succeeds when Claude Code reports success and the scripted
// file is on disk.
func runClaude(ctx context.Context, t *testing.T, claude, baseURL string) claudeOutcome {
	home, work := t.TempDir(), t.TempDir()
	cmd := exec.CommandContext(ctx, claude, "-p", "Write the note file.", "--output-format", "json",
		"--permission-mode", "acceptEdits", "--allowedTools", "Write")
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_API_KEY=shared-account-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	err := cmd.Wait()
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	var res struct {
		Subtype string `json:"subtype"`
		IsError bool   `json:"is_error"`
		Result  string `json:"result"`
	}
	if jerr := json.Unmarshal(stdout.Bytes(), &res); jerr != nil {
		return claudeOutcome{detail: fmt.Sprintf("exit %v, no result: %.200s %.200s", err, stdout.String(), stderr.String())}
	}
	if b, ferr := os.ReadFile(filepath.Join(work, "note.txt")); ferr != nil || string(b) != "done\n" {
		return claudeOutcome{detail: fmt.Sprintf("%s %v: %.200s (file: %v)", res.Subtype, res.IsError, res.Result, ferr)}
	}
	return claudeOutcome{ok: !res.IsError && res.Subtype == "success", detail: res.Subtype + ": " + res.Result}
}

// TestElevenClaudeSessions is the gateway's end-to-end show: eleven concurrent
// real Claude Code sessions share one key on an upstream limited to five
// requests in flight and 60 RPM, with 8% 502s and 5% resets. Through the
// gateway every session must complete; the direct outcome is reported.
func TestElevenClaudeSessions(t *testing.T) {
	claude := envtest.Claude(t)
	// The 60-second window runs at half real time, so a window's wait stays
	// short; Claude Code sees the scaled retry-after.
	cfg := llmfake.Config{
		TimeScale:     0.5,
		MaxConcurrent: 5,
		Limits:        llmfake.Limits{RPM: 60},
		Faults:        llmfake.Faults{Edge: true, ErrorRate: 0.08, ErrorStatuses: []int{502}, ResetRate: 0.05, Latency: 50 * time.Millisecond, Jitter: 50 * time.Millisecond},
	}
	scripts, err := llmfake.ParseScripts("sessions.yaml", []byte(sessionScript))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Scripts = scripts
	run := func(t *testing.T, via string) (ok int, details []string, st llmfake.Stats) {
		fs, up := fake(t, cfg)
		base := up
		if via == "gateway" {
			g := start(t, Config{Upstreams: []Upstream{{Name: "anthropic", URL: up, Provider: llmapi.Anthropic, MaxConcurrency: 5, Window: 30 * time.Second}}, MaxAttempts: 20})
			base = g.URL
		}
		ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
		defer cancel()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 11 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := runClaude(ctx, t, claude, base)
				mu.Lock()
				defer mu.Unlock()
				if o.ok {
					ok++
				} else {
					details = append(details, o.detail)
				}
			}()
		}
		wg.Wait()
		return ok, details, fs.Stats()
	}
	directOK, directFail, dst := run(t, "direct")
	t.Logf("direct: %d of 11 sessions completed; upstream 5xx %d, resets %d, 429 %d, over capacity %d; failures: %q",
		directOK, dst.Total.ServerErrors, dst.Total.Resets, dst.Total.RateLimited, dst.Total.Overloaded, directFail)
	gwOK, gwFail, gst := run(t, "gateway")
	t.Logf("gateway: %d of 11 sessions completed; upstream 5xx %d, resets %d, 429 %d, over capacity %d",
		gwOK, gst.Total.ServerErrors, gst.Total.Resets, gst.Total.RateLimited, gst.Total.Overloaded)
	if gwOK != 11 {
		t.Errorf("through the gateway %d of 11 sessions completed: %q", gwOK, gwFail)
	}
	if gst.Total.ServerErrors+gst.Total.Resets == 0 {
		t.Error("llmfake injected no faults through the gateway: the test proves nothing")
	}
	if gst.MaxInFlight > 5 {
		t.Errorf("the upstream saw %d requests in flight through a gateway capped at 5", gst.MaxInFlight)
	}
}
