package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/access"
	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/llmfake"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// moneyAgent is a command agent that spends tokens through the run's
// gateway with curl, a real HTTP client: $REQUESTS Messages calls with the
// attempt's own key, then it finishes — or, as spender, starts a slow
// stream, tells the test it has spent and waits to be cancelled.
const moneyAgent = `set -e
i=0
while [ "$i" -lt "$REQUESTS" ]; do
  i=$((i + 1))
  code=$(curl -sS -o /dev/null -w '%{http_code}' "$ANTHROPIC_BASE_URL/v1/messages" \
    -H "x-api-key: $ANTHROPIC_API_KEY" -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' \
    -d '{"model": "claude-sonnet-4-5", "max_tokens": 300, "messages": [{"role": "user", "content": "Write the file, please: '"$APIARY_TASK $i"'"}]}')
  echo "request $i: $code"
done
case "$APIARY_TASK" in
  spender)
    # A slow stream is still in flight when the task is cancelled.
    curl -sS -N -o "$FLAGS/stream-$APIARY_TASK" "$ANTHROPIC_BASE_URL/v1/messages" \
      -H "x-api-key: $ANTHROPIC_API_KEY" -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' \
      -d '{"model": "claude-sonnet-4-5", "max_tokens": 300, "stream": true, "messages": [{"role": "user", "content": "Take your time."}]}' &
    sleep 1
    touch "$FLAGS/spent-$APIARY_TASK"
    sleep 300 ;;
esac
echo "$APIARY_TASK done" > "$APIARY_TASK.txt"
`

// moneyTask is one task of moneyRepo's plan.
type moneyTask struct {
	id       string
	requests int
	deps     []string
	check    string // "" is test -f ID.txt
}

// moneyFixture is a repository whose plan's agents spend through the
// run's in-process gateway, in front of llmfake.
type moneyFixture struct {
	repo, plan, flags string
	vars              map[string]string // the run's environment: llmfake's URL and the real key
	fake              *llmfake.Server
}

func moneyRepo(t *testing.T, cfg llmfake.Config, tasks []moneyTask) *moneyFixture {
	t.Helper()
	envtestGit(t)
	envtest.Command(t, "curl")
	ctx := t.Context()
	fake, err := llmfake.New(cfg, llmfake.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fsrv := llmfake.Serve(l, fake)
	t.Cleanup(func() { fsrv.Close() })
	dir := t.TempDir()
	f := &moneyFixture{repo: filepath.Join(dir, "repo"), plan: filepath.Join(dir, "plan.yaml"), flags: filepath.Join(dir, "flags"), fake: fake,
		vars: map[string]string{"ANTHROPIC_BASE_URL": fsrv.URL, "APIARY_MODEL_KEY": "sk-money-real"}}
	for _, d := range []string{f.repo, f.flags} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("# money\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitInit(t, f.repo)
	if _, err := git.New(f.repo, git.Options{}).CommitAll(ctx, git.CommitOptions{Message: "readme\n", Author: git.Signature{Name: "t", Email: "t@apiary.invalid"}}); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte(moneyAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	var p strings.Builder
	fmt.Fprintf(&p, "version: 1\nintegration_branch: main\nmax_parallel: 4\nagents:\n")
	for _, tk := range tasks {
		fmt.Fprintf(&p, "  %s: {kind: command, argv: [sh, %q], env: {FLAGS: %q, REQUESTS: \"%d\"}}\n", tk.id, agent, f.flags, tk.requests)
	}
	p.WriteString("tasks:\n")
	for _, tk := range tasks {
		check := tk.check
		if check == "" {
			check = "test -f " + tk.id + ".txt"
		}
		fmt.Fprintf(&p, "  - id: %s\n    objective: \"Write %s.txt.\"\n    agent: %s\n    write_scope: [%s.txt]\n    checks: [%q]\n    budget: {usd: 5, wall_clock_s: 600}\n",
			tk.id, tk.id, tk.id, tk.id, check)
		if len(tk.deps) > 0 {
			fmt.Fprintf(&p, "    deps: [%s]\n", strings.Join(tk.deps, ", "))
		}
	}
	if err := os.WriteFile(f.plan, []byte(p.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// ledgerSpend is what the run's gateway ledger holds for the attempts of
// one run, per task and in total.
type ledgerSpend struct {
	tasks  map[string]dashboard.Usage
	total  dashboard.Usage
	broken map[string]int64 // requests that did not end ok, by task
}

// readLedger sums .apiary/gateway.db's rows of run by task, as `apiary
// gateway usage --ledger --by agent` groups them (agents are RUN/TASK/aN).
func readLedger(t *testing.T, repo, run string) ledgerSpend {
	t.Helper()
	db, err := gateway.OpenDB(access.RunLedger(repo))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := gateway.Usage(t.Context(), db, "agent")
	if err != nil {
		t.Fatal(err)
	}
	out := ledgerSpend{tasks: map[string]dashboard.Usage{}, broken: map[string]int64{}}
	for _, r := range rows {
		rest, ok := strings.CutPrefix(r.Group, run+"/")
		if !ok {
			continue
		}
		task := rest[:strings.LastIndexByte(rest, '/')]
		out.broken[task] += r.Errors
		u := out.tasks[task]
		u.InputTokens += r.InputTokens + r.CacheTokens
		u.OutputTokens += r.OutputTokens
		u.USD += r.USD
		out.tasks[task] = u
		out.total.InputTokens += r.InputTokens + r.CacheTokens
		out.total.OutputTokens += r.OutputTokens
		out.total.USD += r.USD
	}
	return out
}

func cents(usd float64) int64 { return int64(math.Round(usd * 100)) }

// sameMoney reports whether two usages agree: tokens exactly, dollars to
// the cent.
func sameMoney(a, b dashboard.Usage) bool {
	return a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens && cents(a.USD) == cents(b.USD)
}

// TestMoneyAgreesWithLedger runs a plan whose agents spend through the
// run's gateway; one task is cancelled after it spent. While it runs, the
// dashboard shows its live spend as the ledger has it; afterwards the
// dashboard (of another process), `apiary status --json` and `apiary top`
// give every task's and the run's tokens and dollars as the ledger does,
// to the cent, the cancelled task's included.
func TestMoneyAgreesWithLedger(t *testing.T) {
	t.Parallel()
	f := moneyRepo(t, llmfake.Config{Output: llmfake.Output{TokensMean: 120}, Faults: llmfake.Faults{EventDelay: 300 * time.Millisecond}}, []moneyTask{
		{id: "cheap", requests: 2},
		{id: "spender", requests: 3},
		{id: "after", requests: 1, deps: []string{"spender"}},
	})
	runCtx, stopRun := context.WithCancel(t.Context())
	defer stopRun()
	var stdout, stderr lockedBuffer
	runDone := make(chan error, 1)
	go func() {
		runDone <- cliRun(runCtx, f.vars, &stdout, &stderr, "run", "--dash", "127.0.0.1:0", "--repo", f.repo, f.plan)
	}()
	base := waitURL(t, &stderr, "dashboard on ")
	waitFor(t, 2*time.Minute, func() bool {
		_, err := os.Stat(filepath.Join(f.flags, "spent-spender"))
		return err == nil
	}, "/dev/null")
	ids, err := rundir.List(f.repo)
	if err != nil || len(ids) != 1 {
		t.Fatalf("runs %v %v", ids, err)
	}
	run := ids[0]

	// Live: the running task's spend is on the page before it finishes.
	var live dashboard.Run
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code := getJSON(t, base+"/api/runs/"+run, &live); code != 200 {
			t.Fatalf("GET run: %d", code)
		}
		led := readLedger(t, f.repo, run)
		if tr := taskOf(&live, "spender"); tr != nil && tr.Status == dashboard.StatusRunning && tr.Usage.Known &&
			led.tasks["spender"].InputTokens > 0 && sameMoney(tr.Usage, led.tasks["spender"]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the running task's spend never showed as the ledger's %+v: %+v", led.tasks["spender"], taskOf(&live, "spender"))
		}
		time.Sleep(100 * time.Millisecond)
	}

	if err := cliRun(t.Context(), nil, io.Discard, io.Discard, "cancel", "--repo", f.repo, "--reason", "enough spent", run, "spender"); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	select {
	case err := <-runDone:
		if !errors.Is(err, errSilent) {
			t.Fatalf("run: %v, want a failed run (a task was cancelled)\n%s", err, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not end after the cancellation")
	}
	led := readLedger(t, f.repo, run)
	if led.tasks["spender"].USD <= 0 || led.tasks["cheap"].USD <= 0 {
		t.Fatalf("the ledger has no spend for the tasks: %+v", led.tasks)
	}
	if led.broken["spender"] != 1 {
		t.Errorf("the ledger has %d broken requests of spender, want its stream cut by the cancellation", led.broken["spender"])
	}

	// apiary status --json.
	var out lockedBuffer
	if err := cliRun(t.Context(), nil, &out, io.Discard, "status", "--json", "--repo", f.repo, run); err != nil {
		t.Fatal(err)
	}
	var rep runs.Report
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatal(err)
	}
	if tr := rep.Task("spender"); tr == nil || tr.Status != "cancelled" {
		t.Fatalf("spender in the report: %+v", tr)
	}
	statusTotal := dashboard.Usage{InputTokens: rep.Totals.Usage.InputTokens, OutputTokens: rep.Totals.Usage.OutputTokens, USD: rep.Totals.Usage.USD}
	if !sameMoney(statusTotal, led.total) {
		t.Errorf("status --json total %+v, ledger %+v", statusTotal, led.total)
	}
	for _, tr := range rep.Tasks {
		u := dashboard.Usage{InputTokens: tr.Usage.InputTokens, OutputTokens: tr.Usage.OutputTokens, USD: tr.Usage.USD}
		if !sameMoney(u, led.tasks[tr.ID]) {
			t.Errorf("status --json: task %s (%s) %+v, ledger %+v", tr.ID, tr.Status, u, led.tasks[tr.ID])
		}
	}

	// The dashboard of another process, reading the files and the ledger.
	dashOut := &lockedBuffer{}
	dctx, stopDash := context.WithCancel(t.Context())
	dashDone := make(chan error, 1)
	go func() {
		dashDone <- cliRun(dctx, nil, dashOut, io.Discard, "dash", "--listen", "127.0.0.1:0", "--repo", f.repo)
	}()
	dbase := waitURL(t, dashOut, "dashboard on ")
	var dr dashboard.Run
	if code := getJSON(t, dbase+"/api/runs/"+run, &dr); code != 200 {
		t.Fatalf("GET run: %d", code)
	}
	if !dr.Totals.Usage.Known || !sameMoney(dr.Totals.Usage, led.total) {
		t.Errorf("dashboard total %+v, ledger %+v", dr.Totals.Usage, led.total)
	}
	for _, tr := range dr.Tasks {
		if !sameMoney(tr.Usage, led.tasks[tr.ID]) {
			t.Errorf("dashboard: task %s (%s) %+v, ledger %+v", tr.ID, tr.Status, tr.Usage, led.tasks[tr.ID])
		}
	}
	var sums []dashboard.RunSummary
	if code := getJSON(t, dbase+"/api/runs", &sums); code != 200 || len(sums) != 1 || cents(sums[0].USD) != cents(led.total.USD) {
		t.Errorf("dashboard runs list %+v, ledger $%.4f", sums, led.total.USD)
	}
	stopDash()
	<-dashDone

	// apiary top: its JSON snapshot and what it draws.
	out = lockedBuffer{}
	if err := cliRun(t.Context(), nil, &out, io.Discard, "top", "--json", "--repo", f.repo); err != nil {
		t.Fatal(err)
	}
	var v dashboard.View
	if err := json.Unmarshal([]byte(out.String()), &v); err != nil || v.Run == nil {
		t.Fatalf("top --json: %v %s", err, out.String())
	}
	if !sameMoney(v.Run.Totals.Usage, led.total) {
		t.Errorf("top total %+v, ledger %+v", v.Run.Totals.Usage, led.total)
	}
	out = lockedBuffer{}
	if err := cliRun(t.Context(), nil, &out, io.Discard, "top", "--count", "1", "--repo", f.repo); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("$%.4f", led.total.USD); !strings.Contains(out.String(), want) {
		t.Errorf("top does not show the ledger's total %s:\n%s", want, out.String())
	}
}

func taskOf(r *dashboard.Run, id string) *dashboard.Task {
	for i := range r.Tasks {
		if r.Tasks[i].ID == id {
			return &r.Tasks[i]
		}
	}
	return nil
}
