package runs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// plannerScript writes a plan with an unknown dependency first and, given
// the errors, a valid one on its correction.
const plannerScript = `set -e
if [ -z "$APIARY_PLAN_ERRORS" ]; then
  dep=nowhere
else
  dep=one
fi
cat > "$APIARY_PLAN" <<EOF
version: 1
tasks:
  - {id: one, objective: "write one", agent: $APIARY_WORKER, write_scope: [one.txt]}
  - {id: two, objective: "write two", agent: $APIARY_WORKER, write_scope: [two.txt], deps: [$dep]}
EOF
`

// TestPlannerMode: the planner's invalid plan is handed back with its
// errors once; the corrected plan runs with the worker profile.
func TestPlannerMode(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	script := filepath.Join(t.TempDir(), "planner.sh")
	if err := os.WriteFile(script, []byte(plannerScript), 0o755); err != nil {
		t.Fatal(err)
	}
	agents := map[string]plan.Agent{
		"boss": {Kind: "command", Argv: []string{"sh", script}},
		"w":    {Kind: "command", Argv: []string{"sh", "-c", "echo $APIARY_TASK > $APIARY_TASK.txt"}},
	}
	rep, err := Start(boundedCtx(t), Config{Repo: repo}, NewRun{Goal: "two files", Planner: "boss", Worker: "w", Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Tasks) != 2 {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	if rep.Planner == nil || rep.Planner.Status != "succeeded" || rep.Planner.Attempts != 2 {
		t.Errorf("planner %+v", rep.Planner)
	}
	if gittest.Show(t, repo, "main", "two.txt") != "two\n" {
		t.Error("two.txt missing")
	}
	stored, err := os.ReadFile(filepath.Join(rundir.Path(repo.Dir(), rep.RunID), "plan.yaml"))
	if err != nil || !strings.Contains(string(stored), "deps: [one]") {
		t.Errorf("stored plan %q, %v", stored, err)
	}
	if len(rep.Shares) != 3 || rep.Shares[0].Role != attempt.RolePlanner {
		t.Errorf("shares %+v", rep.Shares)
	}
	// The run resumes from its stored plan like any other.
	again, err := Resume(boundedCtx(t), Config{Repo: repo}, rep.RunID)
	if err != nil || !again.OK() {
		t.Errorf("resume: %v %+v", err, again)
	}
}

// TestPlannerNeverImplements: a planner that changes anything but its plan
// fails the run, and nothing is integrated.
func TestPlannerNeverImplements(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	head := gittest.Git(t, repo.Dir(), "rev-parse", "main")
	agents := map[string]plan.Agent{
		"boss": {Kind: "command", Argv: []string{"sh", "-c", "echo hacked > README; printf 'version: 1\\ntasks: []\\n' > $APIARY_PLAN"}},
		"w":    {Kind: "command", Argv: []string{"true"}},
	}
	rep, err := Start(boundedCtx(t), Config{Repo: repo}, NewRun{Goal: "g", Planner: "boss", Worker: "w", Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Planner == nil || rep.Planner.Status != string(envelope.StatusFailed) || !strings.Contains(rep.Planner.Reason, "changed README") {
		t.Fatalf("report %+v planner %+v", rep, rep.Planner)
	}
	if now := gittest.Git(t, repo.Dir(), "rev-parse", "main"); now != head {
		t.Error("the branch moved")
	}
}

// TestReportNamesModels: the report says, attempt by attempt, which
// profile and model ran — the planner's and the workers' — and a command
// agent is told its profile's model.
func TestReportNamesModels(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	script := filepath.Join(t.TempDir(), "planner.sh")
	if err := os.WriteFile(script, []byte(plannerScript), 0o755); err != nil {
		t.Fatal(err)
	}
	agents := map[string]plan.Agent{
		"boss": {Kind: "command", Argv: []string{"sh", script}, Model: "big-model"},
		"w":    {Kind: "command", Argv: []string{"sh", "-c", "echo $APIARY_MODEL > $APIARY_TASK.txt"}, Model: "small-model"},
	}
	rep, err := Start(boundedCtx(t), Config{Repo: repo}, NewRun{Goal: "two files", Planner: "boss", Worker: "w", Agents: agents})
	if err != nil || !rep.OK() {
		t.Fatalf("run: %v %+v", err, rep)
	}
	if got := gittest.Show(t, repo, "main", "one.txt"); got != "small-model\n" {
		t.Errorf("the worker was told model %q", got)
	}
	if m := rep.Planner.Models; len(m) != 2 || m[0] != (AttemptModel{Attempt: 1, Role: attempt.RolePlanner, Agent: "boss", Model: "big-model"}) {
		t.Errorf("planner models %+v", m)
	}
	for _, tr := range rep.Tasks {
		if len(tr.Models) != 1 || tr.Models[0] != (AttemptModel{Attempt: 1, Role: attempt.RoleWorker, Agent: "w", Model: "small-model"}) {
			t.Errorf("task %s models %+v", tr.ID, tr.Models)
		}
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "models: planner boss (big-model) ×2; worker w (small-model) ×2") {
		t.Errorf("report text:\n%s", b.String())
	}
}
