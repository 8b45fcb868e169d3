//go:build linux

package agent_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// The real-CLI matrix: Claude Code, Codex, Gemini CLI and opencode, each
// run by its built-in profile through agent.Run, × {straight at llmfake,
// through the gateway (a virtual key replaced by the real one upstream),
// through the gateway calling rw.safe_write of a real `apiary mcp`}. Every
// cell checks the bytes the CLI wrote, the CLI's own report (success,
// summary, session id) and that the usage it reports equals what llmfake
// served and, through the gateway, what the ledger metered for its key.

// realKey is the upstream's key; agents behind the gateway never see it.
const realKey = "sk-upstream-real-key"

// Each CLI writes hello.txt with its own file tool; the MCP cells write
// notes/mcp.txt with rw.safe_write, whose name each CLI spells its own way.
// The content has a quote, a non-ASCII line and no final newline, so every
// layer (YAML, JSON, SSE, the tool, MCP) must keep it exact. Codex writes
// through its shell, so its file is plain.
const (
	helloContent = "hello from %s\n  \"quoted\" — ünïcode ✓\nlast line"
	codexHello   = "hello from codex\n"
	mcpContent   = "durable from %s\n  \"quoted\" — ünïcode ✓\nend"
)

type cliCase struct {
	kind  string
	bin   string // name in test/node_modules/.bin
	model string // "" = the profile's default
	// write is the scripted call of the CLI's own file tool.
	write string
	// mcpTool is rw.safe_write of server "apiary" as the CLI names it.
	mcpTool string
	want    string // hello.txt as written
}

var cliCases = []cliCase{
	{kind: agent.KindClaude, bin: "claude",
		write: `{name: Write, input: {file_path: "{{cwd}}/hello.txt", content: %q}}`, mcpTool: "mcp__apiary__rw_safe_write"},
	// A model outside Codex's catalogue gets its classic tools
	// (exec_command); catalogue models get the freeform code-mode tool.
	{kind: agent.KindCodex, bin: "codex", model: "mock-codex",
		write: `{name: exec_command, input: {cmd: "printf 'hello from codex\\n' > hello.txt"}}`, mcpTool: "mcp__apiary__rw_safe_write", want: codexHello},
	// No model: Gemini CLI's router first asks for a JSON verdict, which
	// llmfake answers for the schema.
	{kind: agent.KindGemini, bin: "gemini",
		write: `{name: write_file, input: {file_path: "{{cwd}}/hello.txt", content: %q}}`, mcpTool: "mcp_apiary_rw.safe_write"},
	{kind: agent.KindOpenCode, bin: "opencode",
		write: `{name: write, input: {filePath: "{{cwd}}/hello.txt", content: %q}}`, mcpTool: "apiary_rw_safe_write"},
}

// matrixScript has one script per (CLI, mode), chosen by the prompt's tag.
func matrixScript() string {
	var b strings.Builder
	b.WriteString("session_key: round-robin\nscripts:\n")
	for _, c := range cliCases {
		write := c.write
		if strings.Contains(write, "%q") {
			write = fmt.Sprintf(write, fmt.Sprintf(helloContent, c.kind))
		}
		fmt.Fprintf(&b, `  - name: %[1]s-write
    match: {user: "[task %[1]s-write]"}
    turns:
      - text: "Writing hello.txt."
        tool_calls: [%[2]s]
    final: "Wrote hello.txt for %[1]s."
`, c.kind, write)
		fmt.Fprintf(&b, `  - name: %[1]s-mcp
    match: {user: "[task %[1]s-mcp]"}
    turns:
      - text: "Writing durably."
        tool_calls: [{name: %[2]q, input: {path: notes/mcp.txt, content: %[3]q}}]
    final: "Wrote notes/mcp.txt for %[1]s."
`, c.kind, c.mcpTool, fmt.Sprintf(mcpContent, c.kind))
	}
	return b.String()
}

// binDir holds the apiary binary the MCP cells build; TestMain removes it.
var binDir string

// apiaryBinary builds cmd/apiary once into a temporary directory.
var apiaryBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "apiary-matrix-bin-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "apiary")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/apiary")
	cmd.Dir = moduleRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/apiary: %v\n%s", err, out)
	}
	return bin, nil
})

var moduleRoot string

func TestMain(m *testing.M) {
	wd, _ := os.Getwd()
	moduleRoot = filepath.Join(wd, "..", "..")
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// matrixSlots bounds the CLIs running at once: each is a Node or Bun
// process of a few hundred MB, on a 2-core machine.
var matrixSlots = make(chan struct{}, 3)

func TestRealCLIMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real agent CLIs")
	}
	scripts, err := llmfake.ParseScripts("matrix.yaml", []byte(matrixScript()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cliCases {
		t.Run(c.kind, func(t *testing.T) {
			t.Parallel()
			bin := envtest.NodeBin(t, c.bin)
			for _, mode := range []string{"direct", "gateway", "mcp"} {
				t.Run(mode, func(t *testing.T) {
					t.Parallel()
					matrixSlots <- struct{}{}
					defer func() { <-matrixSlots }()
					runCell(t, c, bin, mode, scripts)
				})
			}
		})
	}
}

func runCell(t *testing.T, c cliCase, bin, mode string, scripts *llmfake.Scripts) {
	fake, fakeURL := startFake(t, scripts)
	base, key := fakeURL, "direct-key-"+c.kind
	var gw *matrixGateway
	if mode != "direct" {
		gw = startGateway(t, fakeURL)
		base, key = gw.url, gw.secret
	}
	dir, home := t.TempDir(), t.TempDir()
	task := c.kind + "-write"
	if mode == "mcp" {
		task = c.kind + "-mcp"
	}
	prof, _ := agent.Builtin(c.kind)
	prof.Bin, prof.Model = bin, c.model
	spec := agent.Spec{Profile: prof, Dir: dir, Home: filepath.Join(home, "home"), Log: filepath.Join(home, "agent.log"),
		Prompt: "[task " + task + "] Do the task.", TaskID: task, RunID: "matrix", BaseURL: base, APIKey: key, Grace: time.Second}
	if mode == "mcp" {
		apiary, err := apiaryBinary()
		if err != nil {
			t.Fatal(err)
		}
		spec.MCPServers = []agent.MCPServer{{Name: "apiary", Command: apiary, Args: []string{"mcp", "--root", dir}}}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := agent.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	logb, _ := os.ReadFile(spec.Log)
	tail := func() string {
		s := string(logb)
		if len(s) > 3000 {
			s = "…" + s[len(s)-3000:]
		}
		return s
	}
	t.Logf("%s/%s: exit %d in %v", c.kind, mode, res.Exit, time.Since(start).Round(time.Millisecond))
	if res.Exit != 0 || res.Cancelled {
		t.Fatalf("exit %d (cancelled %v, signal %q); log:\n%s", res.Exit, res.Cancelled, res.Signal, tail())
	}

	// The bytes on disk.
	path, want := filepath.Join(dir, "hello.txt"), c.want
	if want == "" {
		want = fmt.Sprintf(helloContent, c.kind)
	}
	final := "Wrote hello.txt for " + c.kind + "."
	if mode == "mcp" {
		path, want = filepath.Join(dir, "notes", "mcp.txt"), fmt.Sprintf(mcpContent, c.kind)
		final = "Wrote notes/mcp.txt for " + c.kind + "."
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no file: %v; log:\n%s", err, tail())
	}
	if string(got) != want {
		t.Errorf("%s = %q, want %q", path, got, want)
	}

	// The CLI's own report.
	r := res.Report
	if r == nil {
		t.Fatalf("no report; log:\n%s", tail())
	}
	if r.Subtype != "success" || r.IsError || r.SessionID == "" || r.Text != final {
		t.Errorf("report %+v; want success, a session id and the summary %q", r, final)
	}

	// Usage: counted once, and equal to what was served and metered.
	st := fake.Stats()
	if r.InputTokens != st.Total.TokensIn || r.OutputTokens != st.Total.TokensOut || r.InputTokens == 0 {
		t.Errorf("%s reports %d in / %d out; llmfake served %d / %d in %d requests", c.kind, r.InputTokens, r.OutputTokens,
			st.Total.TokensIn, st.Total.TokensOut, st.Total.Requests)
	}
	metered := "-"
	if gw != nil {
		u := gw.usage(t)
		metered = fmt.Sprintf("%d/%d in %d requests", u.InputTokens, u.OutputTokens, u.Requests)
		if u.InputTokens != r.InputTokens || u.OutputTokens != r.OutputTokens || u.Requests != st.Total.Requests {
			t.Errorf("the gateway metered %d in / %d out in %d requests for the key; %s reports %d / %d, llmfake saw %d requests",
				u.InputTokens, u.OutputTokens, u.Requests, c.kind, r.InputTokens, r.OutputTokens, st.Total.Requests)
		}
		for k := range st.Keys {
			if k != realKey {
				t.Errorf("llmfake saw key %q: the gateway must present only the real key upstream", k)
			}
		}
	}
	t.Logf("%s/%s: reported %d/%d tokens, served %d/%d in %d requests, metered %s", c.kind, mode,
		r.InputTokens, r.OutputTokens, st.Total.TokensIn, st.Total.TokensOut, st.Total.Requests, metered)
}

func startFake(t *testing.T, scripts *llmfake.Scripts) (*llmfake.Server, string) {
	t.Helper()
	s, err := llmfake.New(llmfake.Config{Scripts: scripts, RequireKey: true}, llmfake.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := llmfake.Serve(l, s)
	t.Cleanup(func() { _ = hs.Close() })
	return s, hs.URL
}

type matrixGateway struct {
	url, secret string
	usage       func(t *testing.T) gateway.KeyUsage
}

// startGateway runs a gateway in front of upstream with one virtual key.
func startGateway(t *testing.T, upstream string) *matrixGateway {
	t.Helper()
	db, err := gateway.OpenDB(filepath.Join(t.TempDir(), "gw.db"))
	if err != nil {
		t.Fatal(err)
	}
	led := gateway.NewLedger(db)
	g, err := gateway.New(t.Context(), gateway.Config{
		Upstreams: []gateway.Upstream{{Name: "fake", URL: upstream, APIKey: realKey}},
		DB:        db, Ledger: led, RetryBase: 5 * time.Millisecond, RetryCap: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	secret, vk, err := gateway.CreateKey(t.Context(), db, "matrix", 0, 0, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: g}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = g.Close()
		_ = led.Close()
		_ = db.Close()
	})
	mg := &matrixGateway{url: "http://" + l.Addr().String(), secret: secret}
	mg.usage = func(t *testing.T) gateway.KeyUsage {
		if err := led.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		u, err := gateway.UsageOfKey(t.Context(), db, vk.ID)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	return mg
}
