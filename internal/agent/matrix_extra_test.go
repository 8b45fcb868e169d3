//go:build linux

package agent_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// TestCodexWebSocketCodeMode: Codex's own OpenAI provider with a catalogue
// model, as users run it against the real API: it opens the Responses API
// over a WebSocket and, in "code mode", acts only through the freeform
// exec tool, whose input is JavaScript. llmfake serves both; the file and
// the usage must come out as over HTTP.
func TestCodexWebSocketCodeMode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Codex CLI")
	}
	t.Parallel()
	codex := envtest.NodeBin(t, "codex")
	scripts, err := llmfake.ParseScripts("code.yaml", []byte(`
session_key: round-robin
scripts:
  - name: code
    match: {user: "[task codex-code]"}
    turns:
      - text: "Writing."
        tool_calls:
          - name: exec
            input: "await tools.exec_command({cmd: \"printf 'hello from code mode\\n' > hello.txt\"})"
    final: "Wrote hello.txt in code mode."
`))
	if err != nil {
		t.Fatal(err)
	}
	fake, err := llmfake.New(llmfake.Config{Scripts: scripts, RequireKey: true}, llmfake.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var upgrades atomic.Int64
	url := serveCounting(t, fake, &upgrades)
	dir, home := t.TempDir(), t.TempDir()
	// A command agent: the built-in profile points Codex at an HTTP-only
	// provider (the gateway proxies no WebSocket); this is Codex's default.
	spec := agent.Spec{Profile: agent.Profile{Name: "codex-ws", Kind: agent.KindCommand, Argv: []string{codex, "exec", "--json",
		"-s", "workspace-write", "-C", dir, "--skip-git-repo-check", "--ephemeral", "-c", `openai_base_url="` + url + `/v1"`, "[task codex-code] Do it."},
		Env: map[string]string{"CODEX_HOME": filepath.Join(home, "home"), "CODEX_API_KEY": "{{api_key}}"}},
		Dir: dir, Home: filepath.Join(home, "home"), Log: filepath.Join(home, "agent.log"), BaseURL: url, APIKey: "ws-key", Grace: time.Second}
	if err := os.MkdirAll(spec.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := agent.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	logb, _ := os.ReadFile(spec.Log)
	if res.Exit != 0 {
		t.Fatalf("exit %d:\n%s", res.Exit, logb)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "hello.txt")); err != nil || string(got) != "hello from code mode\n" {
		t.Errorf("hello.txt = %q (%v)", got, err)
	}
	if upgrades.Load() == 0 {
		t.Error("Codex never opened a WebSocket: the test did not exercise the transport")
	}
	// The command agent has no parser; read Codex's own report from the log.
	r := codexReport(t, logb)
	st := fake.Stats().Total
	if r.Subtype != "success" || r.Text != "Wrote hello.txt in code mode." || r.InputTokens != st.TokensIn || r.OutputTokens != st.TokensOut {
		t.Errorf("codex reported %+v; llmfake served %d in / %d out", r, st.TokensIn, st.TokensOut)
	}
	if strings.Contains(string(logb), "incompatible payload") {
		t.Errorf("Codex rejected the custom tool call:\n%s", logb)
	}
}

// codexReport parses a Codex --json log with the codex profile's parser.
func codexReport(t *testing.T, log []byte) agent.Report {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "replay.sh")
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, log, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat \"$REPLAY\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	res, err := agent.Run(t.Context(), agent.Spec{Profile: agent.Profile{Name: "replay", Kind: agent.KindCodex, Bin: script,
		Env: map[string]string{"REPLAY": in}}, Dir: dir, Home: filepath.Join(dir, "home"), Log: filepath.Join(dir, "log")})
	if err != nil || res.Report == nil {
		t.Fatalf("replay: %v, report %v", err, res.Report)
	}
	return *res.Report
}

func serveCounting(t *testing.T, h http.Handler, upgrades *atomic.Int64) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			upgrades.Add(1)
		}
		h.ServeHTTP(w, r)
	}), BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		cancel() // ends the WebSocket handlers, whose connections Close does not track
		_ = srv.Close()
	})
	return "http://" + l.Addr().String()
}

// TestOpenCodeAsCommandAgent: an AI-SDK client run as a command agent reads
// ANTHROPIC_BASE_URL with /v1. Without saying so it posts to /messages and
// fails with a clear error; with env ANTHROPIC_BASE_URL={{base_url}}/v1 it
// works through the gateway.
func TestOpenCodeAsCommandAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real opencode CLI")
	}
	t.Parallel()
	opencode := envtest.NodeBin(t, "opencode")
	scripts, err := llmfake.ParseScripts("oc.yaml", []byte(`
session_key: round-robin
turns:
  - text: "Writing."
    tool_calls: [{name: write, input: {filePath: "{{cwd}}/hello.txt", content: "via a command agent\n"}}]
final: "Done."
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		ok   bool
	}{
		{"without /v1", nil, false},
		{"with {{base_url}}/v1", map[string]string{"ANTHROPIC_BASE_URL": "{{base_url}}/v1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			matrixSlots <- struct{}{}
			defer func() { <-matrixSlots }()
			fake, fakeURL := startFake(t, scripts)
			gw := startGateway(t, fakeURL)
			dir, home := t.TempDir(), t.TempDir()
			env := map[string]string{"OPENCODE_DISABLE_MODELS_FETCH": "true",
				"OPENCODE_CONFIG_CONTENT": `{"share":"disabled","autoupdate":false,"provider":{"anthropic":{"models":{"claude-mock":{"name":"claude-mock"}}}}}`}
			for k, v := range tc.env {
				env[k] = v
			}
			spec := agent.Spec{Profile: agent.Profile{Name: "oc-cmd", Kind: agent.KindCommand, Env: env,
				Argv: []string{opencode, "run", "--format", "json", "--pure", "--auto", "--title", "t", "-m", "anthropic/claude-mock", "Write hello."}},
				Dir: dir, Home: filepath.Join(home, "h"), Log: filepath.Join(home, "log"), BaseURL: gw.url, APIKey: gw.secret, Grace: time.Second}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			res, err := agent.Run(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			logb, _ := os.ReadFile(spec.Log)
			got, ferr := os.ReadFile(filepath.Join(dir, "hello.txt"))
			st := fake.Stats().Total
			if tc.ok {
				if res.Exit != 0 || ferr != nil || string(got) != "via a command agent\n" {
					t.Fatalf("exit %d, hello.txt %q (%v):\n%s", res.Exit, got, ferr, logb)
				}
				return
			}
			// The failure is clear: opencode reports the 404 of /messages,
			// nothing is written, and no model request succeeded.
			if ferr == nil || st.ByStatus["200"] != 0 || !strings.Contains(string(logb), "Not Found") {
				t.Errorf("without /v1: exit %d, file err %v, upstream %v; want a Not Found error and no write:\n%s", res.Exit, ferr, st.ByStatus, logb)
			}
		})
	}
}

// TestAiderCannotRunHere: aider installs only from PyPI, which this
// project's machines cannot reach. Its profile is refused with a clear,
// typed error: MCP servers (aider has no MCP client) before anything
// starts, and a missing executable at start.
func TestAiderCannotRunHere(t *testing.T) {
	dir := t.TempDir()
	spec := agent.Spec{Profile: agent.Profile{Name: "aider", Kind: agent.KindAider}, Dir: dir, Home: filepath.Join(dir, "h"),
		Log: filepath.Join(dir, "log"), MCPServers: []agent.MCPServer{{Name: "apiary", Command: "apiary"}}}
	if _, err := agent.Run(t.Context(), spec); !errors.Is(err, agent.ErrUnsupported) {
		t.Errorf("aider with MCP servers: %v, want ErrUnsupported", err)
	}
	spec.MCPServers = nil
	t.Setenv("PATH", dir) // no aider on it, as on every machine of this project
	if _, err := agent.Run(t.Context(), spec); !errors.Is(err, exec.ErrNotFound) || !strings.Contains(err.Error(), "start aider") {
		t.Errorf("aider not installed: %v, want a start error wrapping exec.ErrNotFound", err)
	}
}
