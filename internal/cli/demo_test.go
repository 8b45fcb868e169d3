package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/demo"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// runDemo runs `apiary demo --json` in-process with args and decodes it.
func runDemo(t *testing.T, args ...string) demo.Result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append([]string{"demo", "--json", "--dir", filepath.Join(t.TempDir(), "demo")}, args...)
	if code := Main(t.Context(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("apiary %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, stdout.String(), stderr.String())
	}
	var res demo.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("demo JSON: %v\n%s", err, stdout.String())
	}
	return res
}

// checkDemo asserts what the demo promises, from the repository and the
// run's files: the final tree, the receipts and the integration history.
func checkDemo(t *testing.T, res demo.Result) {
	t.Helper()
	ctx := t.Context()
	rep := res.Report
	tot := rep.Totals
	if rep.Status != "failed" || tot.Succeeded != 5 || tot.Failed != 1 || tot.Integrated[attempt.FastForward] != 2 ||
		tot.Integrated[attempt.Merge] != 2 || tot.Integrated[attempt.Reconciled] != 1 || tot.GateRejections != 1 {
		t.Fatalf("report %s: %+v", rep.Status, tot)
	}
	repo := git.New(res.Repo, git.Options{})
	// The final tree is the finished project: every accepted change, both
	// README sections, and the test tidy-tests deleted still there.
	for p, w := range demo.Final() {
		if b, err := repo.ReadBlob(ctx, "main", p); err != nil || string(b) != w {
			t.Errorf("main:%s = %q (%v), want %q", p, b, err, w)
		}
	}
	// The receipts.
	runDir := rundir.Path(res.Repo, rep.RunID)
	for _, tr := range rep.Tasks {
		b, err := os.ReadFile(filepath.Join(runDir, "tasks", tr.ID, "receipt.json"))
		if err != nil {
			t.Fatal(err)
		}
		rc, err := envelope.DecodeReceipt(b)
		if err != nil {
			t.Fatalf("%s receipt: %v", tr.ID, err)
		}
		if tr.ID != "tidy-tests" {
			if rc.Status != envelope.StatusSucceeded || rc.Integrated == nil || rc.Commit == "" {
				t.Errorf("%s receipt %+v", tr.ID, rc)
			}
			continue
		}
		g := rc.Gate
		if rc.Status != envelope.StatusFailed || g == nil || g.Gate != "forbidden" || g.Pattern != envelope.PatternDeletedTests || g.File != "calc/add_test.go" {
			t.Errorf("tidy-tests receipt %+v gate %+v", rc, g)
		}
		if ok, _ := repo.IsAncestor(ctx, rc.Commit, "main"); rc.Commit == "" || ok {
			t.Errorf("the rejected commit %q is on the branch (or missing)", rc.Commit)
		}
	}
	// The history: each accepted task once on the first-parent chain, with
	// its trailers; two merges and one reconciled merge of two parents.
	log, err := repo.FirstParentLog(ctx, rep.StartHead, "main")
	if err != nil {
		t.Fatal(err)
	}
	seen, kinds := map[string]int{}, map[string]int{}
	for _, e := range log {
		task, _ := git.TrailerValue(e.Trailers, git.TrailerTask)
		run, _ := git.TrailerValue(e.Trailers, git.TrailerRun)
		if task == "" || run != rep.RunID {
			t.Errorf("commit %s lacks apiary's trailers: %+v", e.ID, e.Trailers)
			continue
		}
		seen[task]++
		kind, ok := git.TrailerValue(e.Trailers, attempt.TrailerIntegration)
		if !ok {
			kind = attempt.FastForward
		}
		kinds[kind]++
		if (kind == attempt.Merge || kind == attempt.Reconciled) != (len(e.Parents) == 2) {
			t.Errorf("%s commit %s has %d parents", kind, e.ID, len(e.Parents))
		}
	}
	if len(seen) != 5 || seen["tidy-tests"] != 0 || kinds[attempt.Merge] != 2 || kinds[attempt.Reconciled] != 1 || kinds[attempt.FastForward] != 2 {
		t.Errorf("history: tasks %v kinds %v", seen, kinds)
	}
	for task, n := range seen {
		if n != 1 {
			t.Errorf("%s integrated %d times", task, n)
		}
	}
}

// TestDemoCommandAgents is the demo end to end with command agents and
// go test checks.
func TestDemoCommandAgents(t *testing.T) {
	t.Parallel()
	envtest.Command(t, "git")
	envtest.Command(t, "go")
	res := runDemo(t, "--agent", "command", "--checks", "go")
	if res.Agents != "command" || res.Checks != "go test" {
		t.Errorf("demo ran %s agents with %s checks", res.Agents, res.Checks)
	}
	checkDemo(t, res)
}

// TestDemoAgents is the demo end to end with each real agent CLI as the
// workers (and the reconciler), scripted through an in-process llmfake:
// every CLI ends with the command-worker demo's outcome.
func TestDemoAgents(t *testing.T) {
	t.Parallel()
	envtest.Command(t, "git")
	envtest.Command(t, "go")
	for _, kind := range []string{agent.KindClaude, agent.KindCodex, agent.KindGemini, agent.KindOpenCode} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			facts, _ := agent.FactsOf(kind)
			bin := envtest.NodeBin(t, facts.Bin)
			res := runDemo(t, "--agent", kind, "--bin", bin, "--checks", "go")
			if res.Agents != kind {
				t.Fatalf("demo ran %s agents", res.Agents)
			}
			checkDemo(t, res)
			// Usage comes from the CLI's own report.
			if u := res.Report.Totals.Usage; u.InputTokens == 0 || u.OutputTokens == 0 {
				t.Errorf("no usage recorded: %+v", u)
			}
			for _, s := range res.Report.Shares {
				if s.Role == attempt.RoleReconciler && s.InputTokens == 0 {
					t.Errorf("the reconciler's tokens are not accounted: %+v", res.Report.Shares)
				}
			}
		})
	}
}

// TestDemoDashSlow: apiary demo --dash --slow serves the dashboard of the
// demo's run while it goes on, slowly enough to watch: the page's API
// shows the six tasks with some running, then the run's end; the demo
// still says what happened.
func TestDemoDashSlow(t *testing.T) {
	t.Parallel()
	envtestGit(t)
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- cliRun(t.Context(), nil, &stdout, &stderr, "demo", "--agent", "command", "--checks", "grep", "--dash", "127.0.0.1:0", "--slow",
			"--dir", filepath.Join(t.TempDir(), "demo"))
	}()
	base := waitURL(t, &stderr, "dashboard on ")
	sawRunning := false
	var run string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && !sawRunning; time.Sleep(100 * time.Millisecond) {
		var sums []dashboard.RunSummary
		if getJSON(t, base+"/api/runs", &sums) != 200 || len(sums) != 1 {
			continue
		}
		run = sums[0].ID
		var r dashboard.Run
		if getJSON(t, base+"/api/runs/"+run, &r) == 200 && len(r.Tasks) == 6 && r.Status == dashboard.StatusRunning {
			for _, tr := range r.Tasks {
				sawRunning = sawRunning || tr.Status == dashboard.StatusRunning
			}
		}
	}
	if !sawRunning {
		t.Fatalf("the dashboard never showed the demo's run with a task running:\n%s", stderr.String())
	}
	if err := <-done; err != nil {
		t.Fatalf("demo: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if took := time.Since(start); took < 2*demo.Delay {
		t.Errorf("a --slow demo took %v: too fast to watch", took)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "that refusal is the gate doing its job") {
		t.Errorf("the demo's last line is %q", last)
	}
}
