package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/runs"
	"github.com/apiary-dev/apiary/internal/swarm"
)

// TestStatusSwarmRuns: `apiary status` finds a swarm run published on the
// repository's local board — listed with its tasks by status when there
// is no local run, and after the latest local run's report when there is
// one — and `apiary status RUN_ID` prints the board's report of it.
func TestStatusSwarmRuns(t *testing.T) {
	t.Parallel()
	envtestGit(t)
	repo, planPath, _ := dashRepo(t, []dashTask{{id: "a", sleep: "0", est: 10}, {id: "b", sleep: "0", deps: []string{"a"}, est: 10}})
	status := func(args ...string) (string, error) {
		t.Helper()
		var stdout, stderr lockedBuffer
		err := cliRun(t.Context(), nil, &stdout, &stderr, append([]string{"status", "--repo", repo}, args...)...)
		if stderr.String() != "" && err == nil {
			t.Errorf("status %v wrote on stderr: %s", args, stderr.String())
		}
		return stdout.String(), err
	}
	if _, err := status(); err == nil || !strings.Contains(err.Error(), "no runs in") {
		t.Fatalf("status without runs: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, board.DefaultLocalPath)); err == nil {
		t.Fatal("status created the board")
	}

	// Publish a swarm run (no workers: its tasks wait).
	data, err := os.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := connect.Open(t.Context(), "local:"+filepath.Join(repo, board.DefaultLocalPath), connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := swarm.Publish(t.Context(), swarm.PublishConfig{Store: st, Repo: git.New(repo, git.Options{}), PlanFile: planPath, PlanData: data})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(rec.Run) + ` +swarm +running +2 +0 +0 +0 +0 +2 +\S+$`)

	out, err := status()
	if err != nil {
		t.Fatalf("status with a swarm run: %v", err)
	}
	if !strings.HasPrefix(out, "swarm runs on the board local:") || !row.MatchString(out) {
		t.Errorf("status does not list the swarm run:\n%s", out)
	}
	out, err = status(rec.Run)
	if err != nil || !strings.HasPrefix(out, "run "+rec.Run+" (swarm): running — 0/2 done") {
		t.Errorf("status %s: %v\n%s", rec.Run, err, out)
	}
	out, err = status("--json")
	var srep swarm.Report
	if err != nil || json.Unmarshal([]byte(out), &srep) != nil || srep.Run != rec.Run || srep.Totals.Tasks != 2 {
		t.Errorf("status --json without a local run: %v\n%s", err, out)
	}
	if _, err := status("20260101-000000-abcdef"); err == nil || !strings.Contains(err.Error(), "no run 20260101-000000-abcdef in") {
		t.Errorf("status of an unknown run: %v", err)
	}

	// A local run: its report first, then the swarm run.
	var stdout, stderr lockedBuffer
	if err := cliRun(t.Context(), nil, &stdout, &stderr, "run", "--repo", repo, planPath); err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	out, err = status()
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	report, list, ok := strings.Cut(out, "\nswarm runs on the board local:")
	if !ok || !strings.HasPrefix(report, "run ") || strings.Contains(report, rec.Run) || !row.MatchString(list) {
		t.Errorf("status after a local run:\n%s", out)
	}
	// --json keeps the local report's shape.
	out, err = status("--json")
	var rep runs.Report
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep.RunID == "" || rep.RunID == rec.Run {
		t.Errorf("status --json: %v\n%s", err, out)
	}
}

// TestStatusUnknownCost: a run whose command agents report nothing, with
// no gateway, has no measured cost: the text says n/a (the tokens stay),
// never $0.0000, and the JSON says the usage is not known.
func TestStatusUnknownCost(t *testing.T) {
	t.Parallel()
	envtestGit(t)
	repo, planPath, _ := dashRepo(t, []dashTask{{id: "a", sleep: "0", est: 10}})
	var stdout, stderr lockedBuffer
	if err := cliRun(t.Context(), nil, &stdout, &stderr, "run", "--repo", repo, planPath); err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var text, js lockedBuffer
	if err := cliRun(t.Context(), nil, &text, &stderr, "status", "--repo", repo); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "0.0000") || !regexp.MustCompile(`(?m)^a +succeeded +1 .* 0/0 +n/a +`).MatchString(text.String()) ||
		!strings.Contains(text.String(), "usage: 0 input + 0 output tokens, n/a") {
		t.Errorf("status claims a cost nothing measured:\n%s", text.String())
	}
	if err := cliRun(t.Context(), nil, &js, &stderr, "status", "--repo", repo, "--json"); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Tasks  []struct{ Usage map[string]any }
		Totals struct{ Usage map[string]any }
	}
	if err := json.Unmarshal([]byte(js.String()), &rep); err != nil || len(rep.Tasks) != 1 {
		t.Fatalf("status --json: %v\n%s", err, js.String())
	}
	for _, u := range []map[string]any{rep.Tasks[0].Usage, rep.Totals.Usage} {
		if u["known"] != false || u["usd"] != 0.0 {
			t.Errorf("usage %v: want usd 0 marked known: false", u)
		}
	}
}
