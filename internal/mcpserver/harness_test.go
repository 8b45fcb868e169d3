//go:build unix

package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/apiary-dev/apiary/internal/durable"
	"github.com/apiary-dev/apiary/internal/mcpserver"
)

// These tests drive real servers in process groups and signal them (and
// durable refuses to open off unix), so the package's external tests are
// unix-only; the internal ones (args, wire) run everywhere.

// apiaryBin is the real apiary binary, built once per test run by
// TestMain (without -race, so the servers run at full speed even when the
// tests are race-instrumented; the in-process cases cover the server code
// under the race detector).
var apiaryBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "apiary-mcpserver-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	apiaryBin = filepath.Join(dir, "apiary")
	build := exec.Command("go", "build", "-o", apiaryBin, "github.com/apiary-dev/apiary/cmd/apiary")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building apiary:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Fixtures of the acceptance checklist.
var (
	OAT    = "sk-ant-oat01-" + strings.Repeat("A", 42)
	API    = "sk-ant-api03-" + strings.Repeat("B", 42)
	OPENAI = "sk-" + strings.Repeat("C", 40)
	GHO    = "gho_" + strings.Repeat("D", 36)
	GHP    = "ghp_" + strings.Repeat("E", 36)
	AKID   = "AKIA" + strings.Repeat("F", 16)
	JWT    = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqYXkifQ.signaturepart_XYZ"
	EMAIL  = "alice@example.com"
	SSN    = "123-45-6789"
)

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// transport names.
const (
	inMemory = "inmem" // mcpserver.New over in-memory transports (fast)
	stdio    = "stdio" // the real `apiary mcp` over stdio, handshake era
	httpT    = "http"  // the real `apiary mcp --listen`, 2026-07-28
)

// srvOpts describe how a case's server is started.
type srvOpts struct {
	env    map[string]string // extra environment (RW_*)
	args   []string          // extra flags
	compat bool              // --rw-compat
	noWS   bool              // do not set RW_WORKSPACE; run in the workspace
	client *mcp.ClientOptions
}

// pc is one parity case's connection.
type pc struct {
	t     *testing.T
	ws    string
	state string
	cs    *mcp.ClientSession
	ctx   context.Context
}

// startServer starts a server over transport tr for a fresh workspace.
func startServer(t *testing.T, tr string, o srvOpts, setup func(ws string)) *pc {
	t.Helper()
	ws := workspaceDir(t)
	if setup != nil {
		setup(ws)
	}
	c := &pc{t: t, ws: ws, ctx: t.Context(), state: durable.DefaultStateDir}
	if o.compat {
		c.state = durable.CompatStateDir
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "parity", Version: "1"}, o.client)
	switch tr {
	case inMemory:
		cfg := durable.Config{Roots: []string{ws}, PolicyFile: o.env["RW_POLICY_FILE"], ScratchGetDisabled: o.env["RW_SCRATCH_DISABLE_GET"] != ""}
		name := ""
		if o.compat {
			cfg.StateDir, cfg.Caller, name = durable.CompatStateDir, durable.CompatCaller, durable.CompatCaller
		}
		if py, err := exec.LookPath("python3"); err == nil {
			cfg.Python = durable.Python3{Path: py}
		}
		w, err := durable.Open(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		srv := mcpserver.New(w, mcpserver.Options{Name: name})
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.WithoutCancel(t.Context()), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		cs, err := client.Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		c.cs = cs
	case stdio:
		cmd := apiaryCmd(t, ws, o, "mcp")
		cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("connect stdio: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		c.cs = cs
	case httpT:
		url := startHTTP(t, ws, o)
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatalf("connect http: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		c.cs = cs
	}
	return c
}

// apiaryCmd returns the apiary binary set up to run `apiary <args>`.
func apiaryCmd(t testing.TB, ws string, o srvOpts, args ...string) *exec.Cmd {
	t.Helper()
	if o.compat {
		args = append(args, "--rw-compat")
	}
	for _, a := range o.args {
		args = append(args, strings.ReplaceAll(a, "$WS", ws))
	}
	cmd := exec.Command(apiaryBin, args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RW_") {
			env = append(env, kv)
		}
	}
	if !o.noWS {
		env = append(env, "RW_WORKSPACE="+ws)
	}
	for k, v := range o.env {
		env = append(env, k+"="+v)
	}
	cmd.Env = env
	cmd.Dir = ws
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", logs.String())
		}
	})
	return cmd
}

// startHTTP runs `apiary mcp --listen 127.0.0.1:0` and returns its URL.
func startHTTP(t *testing.T, ws string, o srvOpts) string {
	t.Helper()
	cmd := apiaryCmd(t, ws, o, "mcp", "--listen", "127.0.0.1:0")
	pr, pw := io.Pipe()
	logs := cmd.Stderr.(*lockedBuffer)
	cmd.Stderr = io.MultiWriter(logs, pw)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); pw.Close(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "serving "); ok {
				urlc <- strings.Fields(rest)[0]
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case u := <-urlc:
		return u
	case <-exited:
		t.Fatalf("server exited: %s", logs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("server did not start")
	}
	return ""
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// call invokes a tool and checks the invariants every result must hold:
// content[0] is JSON, structuredContent is the same object, isError is !ok,
// and an envelope has exactly the schema's keys and enum values.
func (c *pc) call(tool string, args map[string]any) map[string]any {
	c.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := c.cs.CallTool(c.ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s: protocol error: %v", tool, err)
	}
	return checkResult(c.t, tool, res)
}

func checkResult(t *testing.T, tool string, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content", tool)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content[0] is %T", tool, res.Content[0])
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text.Text), &m); err != nil {
		t.Fatalf("%s: content[0] is not JSON: %v", tool, err)
	}
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var sm map[string]any
	if err := json.Unmarshal(sc, &sm); err != nil || !reflect.DeepEqual(sm, m) {
		t.Fatalf("%s: structuredContent %s differs from content[0] %s", tool, sc, text.Text)
	}
	okv, _ := m["ok"].(bool)
	if res.IsError == okv {
		t.Fatalf("%s: isError=%v but ok=%v", tool, res.IsError, m["ok"])
	}
	if !okv {
		checkEnvelope(t, tool, m)
	}
	return m
}

// checkEnvelope asserts m is a valid Resilient Write error envelope.
func checkEnvelope(t *testing.T, tool string, m map[string]any) {
	t.Helper()
	want := []string{"context", "detected_patterns", "error", "ok", "reason_hint", "retry_budget", "schema_version", "suggested_action"}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, want) {
		t.Fatalf("%s: envelope keys %v, want %v", tool, keys, want)
	}
	in := func(v any, set ...string) bool { s, ok := v.(string); return ok && slices.Contains(set, s) }
	switch {
	case m["ok"] != false, m["schema_version"] != "1":
		t.Fatalf("%s: bad ok/schema_version in %v", tool, m)
	case !in(m["error"], "blocked", "stale_precondition", "write_corruption", "quota_exceeded", "policy_violation"):
		t.Fatalf("%s: bad error kind %v", tool, m["error"])
	case !in(m["reason_hint"], "content_filter", "size_limit", "encoding", "permission", "network", "unknown"):
		t.Fatalf("%s: bad reason_hint %v", tool, m["reason_hint"])
	case !in(m["suggested_action"], "redact", "split", "escape", "ask_user", "retry_later", "abort"):
		t.Fatalf("%s: bad suggested_action %v", tool, m["suggested_action"])
	}
	if b, ok := m["retry_budget"].(float64); !ok || b < 0 || b != float64(int(b)) {
		t.Fatalf("%s: bad retry_budget %v", tool, m["retry_budget"])
	}
	if _, ok := m["detected_patterns"].([]any); !ok {
		t.Fatalf("%s: detected_patterns %v is not a list", tool, m["detected_patterns"])
	}
	ctx, ok := m["context"].(map[string]any)
	if !ok {
		t.Fatalf("%s: context %v is not an object", tool, m["context"])
	}
	if ctx["tool"] != tool {
		t.Fatalf("%s: context.tool = %v", tool, ctx["tool"])
	}
	retriable := m["reason_hint"] == "network" || m["reason_hint"] == "size_limit" || m["suggested_action"] == "retry_later"
	if ctx["retriable"] != retriable {
		t.Fatalf("%s: context.retriable = %v for %v", tool, ctx["retriable"], m["reason_hint"])
	}
}

// ok calls a tool that must succeed.
func (c *pc) ok(tool string, args map[string]any) map[string]any {
	c.t.Helper()
	m := c.call(tool, args)
	if m["ok"] != true {
		c.t.Fatalf("%s %v: want ok, got %v", tool, args, m)
	}
	return m
}

// fail calls a tool that must fail with kind (and hint, if not "").
func (c *pc) fail(tool string, args map[string]any, kind, hint string) map[string]any {
	c.t.Helper()
	m := c.call(tool, args)
	if m["ok"] != false || m["error"] != kind || (hint != "" && m["reason_hint"] != hint) {
		c.t.Fatalf("%s %v: want %s/%s, got %v", tool, args, kind, hint, m)
	}
	return m
}

// reason returns an envelope's context.reason.
func reason(m map[string]any) string {
	s, _ := m["context"].(map[string]any)["reason"].(string)
	return s
}

func (c *pc) path(rel string) string { return filepath.Join(c.ws, filepath.FromSlash(rel)) }

func (c *pc) read(rel string) string {
	c.t.Helper()
	b, err := os.ReadFile(c.path(rel))
	if err != nil {
		c.t.Fatal(err)
	}
	return string(b)
}

func (c *pc) exists(rel string) bool {
	_, err := os.Lstat(c.path(rel))
	return err == nil
}

func (c *pc) write(rel, content string) {
	c.t.Helper()
	if err := os.MkdirAll(filepath.Dir(c.path(rel)), 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(c.path(rel), []byte(content), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// journal returns the rows of the journal file.
func (c *pc) journal() []map[string]any {
	c.t.Helper()
	data, err := os.ReadFile(c.path(c.state + "/journal.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			c.t.Fatalf("journal line %q: %v", line, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// seedJournal writes journal rows by hand, as Resilient Write's tests do.
func (c *pc) seedJournal(rows ...map[string]any) {
	c.t.Helper()
	var b strings.Builder
	for _, r := range rows {
		j, _ := json.Marshal(r)
		b.Write(j)
		b.WriteByte('\n')
	}
	c.write(c.state+"/journal.jsonl", b.String())
}

// paths returns the "path" fields of rows.
func paths(rows []any) []string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprint(r.(map[string]any)["path"]))
	}
	return out
}

func num(v any) float64 { f, _ := v.(float64); return f }

func list(v any) []any { l, _ := v.([]any); return l }

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// parityCase is one or more checklist items run on a fresh workspace.
type parityCase struct {
	id    string // checklist number(s), e.g. "D25" or "B10-12"
	opts  srvOpts
	setup func(ws string)
	run   func(c *pc)
	skip  []string // transports this case does not apply to
	inmem bool     // also run in-process (under -race, the server code too)
}

// runCases runs every case over every transport.
func runCases(t *testing.T, cases []parityCase) {
	t.Helper()
	for _, tr := range []string{inMemory, stdio, httpT} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			for _, tc := range cases {
				if slices.Contains(tc.skip, tr) || (tr == inMemory && !tc.inmem) {
					continue
				}
				t.Run(tc.id, func(t *testing.T) {
					t.Parallel()
					c := startServer(t, tr, tc.opts, tc.setup)
					tc.run(c)
				})
			}
		})
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// workspaceDir returns a fresh workspace inside a fresh parent directory (so
// attack fixtures can sit beside it). It lives on tmpfs (/dev/shm) when
// there is one: the suites fsync several times per write, and a SIGKILL or
// a confinement test proves nothing more on a disk. The durability recipe
// on a real disk is exercised by durable's TestDurableOnDisk and the
// benchmarks.
func workspaceDir(t testing.TB) string {
	t.Helper()
	parent := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if p, err := os.MkdirTemp("/dev/shm", "apiary-mcpserver-"); err == nil {
			parent = p
			t.Cleanup(func() { os.RemoveAll(p) })
		}
	}
	if parent == "" {
		parent = t.TempDir()
	}
	ws := filepath.Join(parent, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}
