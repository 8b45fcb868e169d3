package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/llmfake"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
	"github.com/apiary-dev/apiary/internal/telemetry"
	"github.com/apiary-dev/apiary/internal/telemetry/telemetrytest"
)

// dashTask is one task of a test plan: its command agent sleeps, then
// writes ID.txt; the check is that the file exists.
type dashTask struct {
	id    string
	sleep string // seconds, for sleep(1)
	deps  []string
	est   int
}

// dashRepo builds a git repository (with .apiary/ initialised) and a plan
// of command agents outside it. Each agent logs, records the TRACEPARENT
// it was given under traces/, sleeps and writes its file.
func dashRepo(t *testing.T, tasks []dashTask) (repo, planPath, traces string) {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	repo, traces = filepath.Join(dir, "repo"), filepath.Join(dir, "traces")
	for _, d := range []string{repo, traces} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var script strings.Builder
	script.WriteString("#!/bin/sh\nset -e\necho \"$APIARY_TASK starting\"\n")
	fmt.Fprintf(&script, "printf '%%s' \"$TRACEPARENT\" > %q/\"$APIARY_TASK\"\n", traces)
	script.WriteString("case \"$APIARY_TASK\" in\n")
	for _, tk := range tasks {
		fmt.Fprintf(&script, "  %s) sleep %s ;;\n", tk.id, tk.sleep)
	}
	script.WriteString("esac\necho \"$APIARY_TASK done\" > \"$APIARY_TASK.txt\"\necho \"$APIARY_TASK done\"\n")
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte(script.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, "git", "init", "--quiet", "--initial-branch=main", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	if _, err := git.New(repo, git.Options{}).CommitAll(ctx, git.CommitOptions{Message: "initial\n", Author: git.Signature{Name: "t", Email: "t@apiary.invalid"}}); err != nil {
		t.Fatal(err)
	}
	if err := rundir.Init(repo); err != nil {
		t.Fatal(err)
	}
	var p strings.Builder
	fmt.Fprintf(&p, "version: 1\nintegration_branch: main\nmax_parallel: 4\nagents:\n  worker: {kind: command, argv: [sh, %q]}\ntasks:\n", agent)
	for _, tk := range tasks {
		fmt.Fprintf(&p, "  - id: %s\n    objective: \"Write %s.txt.\"\n    agent: worker\n    write_scope: [%s.txt]\n    checks: [\"test -f %s.txt\"]\n    estimate_s: %d\n    budget: {wall_clock_s: 600}\n",
			tk.id, tk.id, tk.id, tk.id, tk.est)
		if len(tk.deps) > 0 {
			fmt.Fprintf(&p, "    deps: [%s]\n", strings.Join(tk.deps, ", "))
		}
	}
	planPath = filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(planPath, []byte(p.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return repo, planPath, traces
}

// lockedBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
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

// cliRun runs the command line in-process with its own environment.
func cliRun(ctx context.Context, vars map[string]string, stdout, stderr io.Writer, args ...string) error {
	e := &env{Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr, Getenv: func(k string) string { return vars[k] }}
	return rootCommand().Execute(ctx, e, "apiary", args)
}

// TestRunTelemetry runs a plan with OTLP configured and checks the trace a
// real collector receives: one trace with the run's id, an attempt span
// per task whose span id is the one in the TRACEPARENT its agent saw, the
// integrations and the check gates under them; then reads the same run
// through the dashboard's sources, `apiary top` and the board.
func TestRunTelemetry(t *testing.T) {
	t.Parallel()
	envtestGit(t)
	repo, planPath, traces := dashRepo(t, []dashTask{{id: "a", sleep: "0", est: 10}, {id: "b", sleep: "0", deps: []string{"a"}, est: 10}})
	col := telemetrytest.Start(t)
	var stdout, stderr lockedBuffer
	err := cliRun(t.Context(), map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.URL()}, &stdout, &stderr, "run", "--json", "--repo", repo, planPath)
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var rep runs.Report
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil || !rep.OK() {
		t.Fatalf("report %v: %s", err, stdout.String())
	}
	rec, err := rundir.Open(repo, rep.RunID).Record()
	if err != nil {
		t.Fatal(err)
	}
	spans := col.Spans()
	byName := map[string][]telemetrytest.Span{}
	for _, s := range spans {
		if s.TraceID != rec.TraceID {
			t.Errorf("span %s %v in trace %s, want the run's %s", s.Name, s.Attrs, s.TraceID, rec.TraceID)
		}
		byName[s.Name] = append(byName[s.Name], s)
	}
	if len(byName[telemetry.SpanRun]) != 1 || len(byName[telemetry.SpanAttempt]) != 2 || len(byName[telemetry.SpanIntegration]) != 2 || len(byName[telemetry.SpanGate]) != 2 {
		t.Fatalf("spans by name: %v", byName)
	}
	run := byName[telemetry.SpanRun][0]
	attempt := map[string]telemetrytest.Span{}
	for _, s := range byName[telemetry.SpanAttempt] {
		task := s.Attrs["apiary.task"]
		attempt[task] = s
		seen, err := os.ReadFile(filepath.Join(traces, task))
		if err != nil {
			t.Fatal(err)
		}
		if want := "00-" + rec.TraceID + "-" + s.SpanID + "-01"; string(seen) != want {
			t.Errorf("agent %s saw TRACEPARENT %q; its attempt span is %s", task, seen, want)
		}
		if s.Parent != run.SpanID {
			t.Errorf("attempt %s under %s, want the run span", task, s.Parent)
		}
	}
	for _, s := range byName[telemetry.SpanIntegration] {
		if s.Parent != attempt[s.Attrs["apiary.task"]].SpanID || s.Attrs["apiary.outcome"] != "integrated" {
			t.Errorf("integration %+v", s)
		}
	}
	for _, s := range byName[telemetry.SpanGate] {
		if !strings.HasPrefix(s.Attrs["apiary.check.command"], "test -f ") || s.Error {
			t.Errorf("gate %+v", s)
		}
	}

	// The dashboard's sources read the same run from disk.
	o := &dashOptions{repo: repo}
	src, closeSrc, err := o.sources(t.Context(), &env{Stderr: io.Discard, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSrc()
	if src.Board != nil {
		t.Error("a board was opened though the repository has none")
	}
	r, err := src.Runs.Run(t.Context(), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tasks) != 2 || len(r.Edges) != 1 || r.Edges[0] != (dashboard.Edge{From: "a", To: "b", Kind: "data"}) || r.Status != "succeeded" {
		t.Errorf("run %+v edges %+v", r, r.Edges)
	}
	d, err := src.Runs.Task(t.Context(), rep.RunID, "b")
	if err != nil {
		t.Fatal(err)
	}
	if d.Fence == 0 || d.Traceparent == "" || d.Log == nil || !strings.Contains(d.Log.Text, "b done") ||
		len(d.DiffStat) != 1 || d.DiffStat[0] != (dashboard.FileStat{Path: "b.txt", Added: 1}) || len(d.Checks) != 1 ||
		len(d.AttemptList) != 1 || d.AttemptList[0].Finished == nil || d.Objective != "Write b.txt." || len(d.Envelope) == 0 || len(d.Receipt) == 0 {
		t.Errorf("task detail %+v", d)
	}
	for _, bad := range []string{"../a", "nope"} {
		if _, err := src.Runs.Task(t.Context(), rep.RunID, bad); err == nil {
			t.Errorf("task %q: no error", bad)
		}
	}

	// apiary top, plain (stdout is not a terminal), once; and as JSON.
	var top bytes.Buffer
	if err := cliRun(t.Context(), nil, &top, io.Discard, "top", "--repo", repo, "--count", "1"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"run " + rep.RunID + ": succeeded — 2 of 2 tasks succeeded", "* a ", "succeeded", "critical path: a → b"} {
		if !strings.Contains(top.String(), want) {
			t.Errorf("top lacks %q:\n%s", want, top.String())
		}
	}
	if strings.Contains(top.String(), "\x1b[") {
		t.Errorf("top wrote escape codes to a pipe:\n%s", top.String())
	}
	top.Reset()
	if err := cliRun(t.Context(), nil, &top, io.Discard, "top", "--repo", repo, "--json"); err != nil {
		t.Fatal(err)
	}
	var v dashboard.View
	if err := json.Unmarshal(top.Bytes(), &v); err != nil || v.Run == nil || v.Run.ID != rep.RunID || len(v.Runs) != 1 {
		t.Errorf("top --json: %v %s", err, top.String())
	}
}

func envtestGit(t *testing.T) {
	t.Helper()
	envtest.Command(t, "git") // skips, or fails under CI=true, without git
}

// TestDashBoardActions serves `apiary dash` on a repository with a local
// board and reviews hints through its HTTP API, as the page does.
func TestDashBoardActions(t *testing.T) {
	t.Parallel()
	envtestGit(t)
	repo, _, _ := dashRepo(t, []dashTask{{id: "a", sleep: "0"}})
	st, err := connect.Open(t.Context(), "local:"+filepath.Join(repo, board.DefaultLocalPath), connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, typ := range []string{"readme-overlap", "api-rename"} {
		if _, first, err := st.RecordConflict(t.Context(), board.Conflict{Type: typ, Tasks: []string{"a", "b"}, Files: []string{"README.md"}, Resolution: "resolve " + typ}); err != nil || !first {
			t.Fatalf("conflict %s: first=%v %v", typ, first, err)
		}
	}
	// Two escrowed operations waiting in the repository's queue.
	q := runs.NewEscrowQueue(repo, nil)
	for _, id := range []string{"push-1", "deploy-1"} {
		req := runs.EscrowRequest{ID: id, Run: "r", Task: "a", Kind: "command", Operation: "git push origin main", Chain: []string{"a", "root"},
			State: runs.EscrowPending, Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
		b, _ := json.Marshal(req)
		if err := os.MkdirAll(rundir.State(repo, "escrow"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(rundir.State(repo, "escrow", id+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stdout := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- cliRun(ctx, nil, stdout, io.Discard, "dash", "--repo", repo, "--listen", "127.0.0.1:0")
	}()
	base := waitURL(t, stdout, "dashboard on ")
	var b dashboard.BoardSnapshot
	if code := getJSON(t, base+"/api/board", &b); code != 200 || len(b.Hints) != 2 || len(b.Conflicts) != 2 {
		t.Fatalf("board %d %+v", code, b)
	}
	act := func(path, body string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("X-Apiary-Dashboard", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		path, body string
		want       int
	}{
		{"/api/hints/readme-overlap/approve", `{"note":"looks right"}`, 200},
		{"/api/hints/readme-overlap/reject", `{}`, 409}, // reviewed already
		{"/api/hints/api-rename/reject", `{"note":"no"}`, 200},
		{"/api/hints/unknown/approve", `{}`, 404},
		{"/api/runs/20260101-000000-abcdef/cancel", `{}`, 404},
		{"/api/escrow/nope-1/approve", `{}`, 404},
		{"/api/escrow/push-1/approve", `{"note":"release day"}`, 200},
		{"/api/escrow/push-1/deny", `{}`, 409}, // decided already
		{"/api/escrow/deploy-1/deny", `{}`, 200},
	} {
		if got := act(tc.path, tc.body); got != tc.want {
			t.Errorf("POST %s = %d, want %d", tc.path, got, tc.want)
		}
	}
	var es []dashboard.EscrowRequest
	if code := getJSON(t, base+"/api/escrow", &es); code != 200 || len(es) != 2 {
		t.Errorf("escrow %d %+v", code, es)
	}
	for id, want := range map[string]string{"push-1": runs.EscrowApproved, "deploy-1": runs.EscrowDenied} {
		r, err := q.Get(id)
		if err != nil || r.State != want || r.DecidedBy != "dashboard" {
			t.Errorf("escrow %s = %+v %v, want %s by dashboard", id, r, err, want)
		}
	}
	for typ, want := range map[string]board.HintState{"readme-overlap": board.HintApproved, "api-rename": board.HintRejected} {
		h, err := st.Hint(t.Context(), typ)
		if err != nil || h.State != want || h.Reviewer != "dashboard" {
			t.Errorf("hint %s = %+v %v, want %s by dashboard", typ, h, err, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("dash: %v", err)
	}
}

// waitURL waits until out holds a line starting with prefix and returns
// the URL after it.
func waitURL(t *testing.T, out interface{ String() string }, prefix string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(out.String(), "\n") {
			if i := strings.Index(line, prefix); i >= 0 && strings.Contains(line[i:], "http://") {
				return strings.TrimSpace(line[i+len(prefix):])
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %q line in:\n%s", prefix, out.String())
	return ""
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode
}

// TestGatewayDash runs `apiary gateway --dash` with OTLP configured: the
// dashboard shows the gateway's traffic, and a request carrying a
// traceparent becomes a server span in the caller's trace.
func TestGatewayDash(t *testing.T) {
	t.Parallel()
	fake, err := llmfake.New(llmfake.Config{}, llmfake.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fs := llmfake.Serve(fl, fake)
	defer fs.Close()
	col := telemetrytest.Start(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- cliRun(ctx, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.URL()}, &stdout, &stderr, "gateway", "--listen", "127.0.0.1:0",
			"--ledger", filepath.Join(t.TempDir(), "state.db"), "--upstream", "anthropic="+fs.URL, "--dash", "127.0.0.1:0")
	}()
	gw := waitURL(t, &stdout, "listening on ")
	dash := waitURL(t, &stderr, "dashboard on ")
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, gw+"/v1/messages",
		strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", "sk-test")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("X-Apiary-Agent", "alice")
	req.Header.Set("traceparent", tp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("through the gateway: %s", resp.Status)
	}
	var v dashboard.GatewayView
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		getJSON(t, dash+"/api/gateway", &v)
		if v.Snapshot != nil && len(v.Snapshot.Agents) == 1 && v.Snapshot.Upstreams[0].Requests == 1 || time.Now().After(deadline) {
			break
		}
	}
	if !v.Connected || v.Snapshot == nil || v.Snapshot.Agents[0].Agent != "alice" || v.Snapshot.Agents[0].OutputTokens == 0 || len(v.History["anthropic"]) == 0 {
		t.Fatalf("gateway view %+v", v)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("gateway: %v", err)
	}
	var server *telemetrytest.Span
	for _, s := range col.Spans() {
		if s.Name == "gateway POST" && s.Attrs["url.path"] == "/v1/messages" {
			server = &s
		}
	}
	if server == nil || server.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || server.Parent != "00f067aa0ba902b7" || server.Attrs["http.response.status_code"] != "200" {
		t.Errorf("gateway span %+v in %+v", server, col.Spans())
	}
}
