package demo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/runs"
)

// TestBuild: the repository Build makes is the project without what the
// tasks add (README with both sections TODO, no mul, sub or cmd), in one
// commit on main; every task's content is written beside it, and the
// command agents' scripts are there.
func TestBuild(t *testing.T) {
	t.Parallel()
	envtest.Command(t, "git")
	dir := t.TempDir()
	repoDir := filepath.Join(dir, "repo")
	if err := Build(t.Context(), dir, repoDir); err != nil {
		t.Fatal(err)
	}
	repo := git.New(repoDir, git.Options{})
	final := Final()
	for _, p := range []string{"go.mod", "calc/add.go", "calc/add_test.go"} {
		if b, err := repo.ReadBlob(t.Context(), "main", p); err != nil || string(b) != final[p] {
			t.Errorf("main:%s = %q (%v), want the project's", p, b, err)
		}
	}
	if b, err := repo.ReadBlob(t.Context(), "main", "README.md"); err != nil || strings.Count(string(b), "TODO") != 2 {
		t.Errorf("main:README.md = %q (%v), want both sections TODO", b, err)
	}
	for _, p := range []string{"calc/mul.go", "calc/sub.go", "cmd/calc/main.go"} {
		if _, err := repo.ReadBlob(t.Context(), "main", p); err == nil {
			t.Errorf("main:%s exists before its task ran", p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "content", "mul", "calc", "mul.go")); err != nil || string(b) != final["calc/mul.go"] {
		t.Errorf("mul's content: %q (%v)", b, err)
	}
	tidy, err := os.ReadFile(filepath.Join(dir, "content", "tidy-tests", "calc", "add_test.go"))
	if err != nil || strings.Contains(string(tidy), "TestAddNegative") || !strings.Contains(final["calc/add_test.go"], "TestAddNegative") {
		t.Errorf("tidy-tests' add_test.go still has the test it deletes, or the project lacks it (%v)", err)
	}
	for _, s := range []string{"run.sh", "reconcile.sh"} {
		if fi, err := os.Stat(filepath.Join(dir, "agents", s)); err != nil || fi.Size() == 0 {
			t.Errorf("agents/%s: %v", s, err)
		}
	}
}

// TestPlan: the plan of every kind of worker parses, has the six tasks
// and the dependencies the outcome relies on, and points at a model only
// for agent CLIs.
func TestPlan(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"command", agent.KindClaude, agent.KindCodex, agent.KindGemini, agent.KindOpenCode} {
		for _, hasGo := range []bool{true, false} {
			doc := Plan("/demo", kind, hasGo, time.Second)
			p, err := plan.Parse("plan.yaml", []byte(doc))
			if err != nil {
				t.Fatalf("%s: %v\n%s", kind, err, doc)
			}
			if len(p.Tasks) != 6 {
				t.Errorf("%s: %d tasks", kind, len(p.Tasks))
			}
			if strings.Contains(doc, "go test") != hasGo {
				t.Errorf("%s with go %v: checks %s", kind, hasGo, doc)
			}
			if (Model(kind) != "") != (kind != "command") || (kind != "command") != strings.Contains(doc, "model: "+Model(kind)) {
				t.Errorf("%s: model %q in\n%s", kind, Model(kind), doc)
			}
		}
	}
}

// TestShown: a run that lacks any of what the demo promises is an error
// naming it.
func TestShown(t *testing.T) {
	t.Parallel()
	gate := &envelope.GateReason{Gate: "forbidden", Pattern: envelope.PatternDeletedTests}
	good := func() *runs.Report {
		return &runs.Report{Status: "failed", Totals: runs.Totals{Tasks: 6, Succeeded: 5, Failed: 1,
			Integrated: map[string]int{attempt.FastForward: 2, attempt.Merge: 2, attempt.Reconciled: 1}},
			Tasks: []runs.TaskReport{{ID: "tidy-tests", Status: "failed", Gate: gate}}}
	}
	if err := Shown(good()); err != nil {
		t.Fatal(err)
	}
	noMerge := good()
	noMerge.Totals.Integrated[attempt.Merge] = 0
	noGate := good()
	noGate.Tasks[0].Gate = nil
	fewer := good()
	fewer.Totals.Succeeded = 4
	for want, rep := range map[string]*runs.Report{"a three-way merge": noMerge, "a gate rejection": noGate, "five successful tasks": fewer} {
		if err := Shown(rep); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("without %s: %v", want, err)
		}
	}
}

// TestModelServerKeys: the scripts parse for every agent CLI, and each
// task's worker and the reconciler get the keys that select theirs.
func TestModelServerKeys(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{agent.KindClaude, agent.KindCodex, agent.KindGemini, agent.KindOpenCode} {
		if _, err := ModelServer(kind, 0); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
	}
	if k := Key(attempt.TaskRef{Task: "mul", Role: attempt.RoleWorker}); k != "demo-mul" {
		t.Errorf("worker key %q", k)
	}
	if k := Key(attempt.TaskRef{Task: "usage-doc", Role: attempt.RoleReconciler}); k != "demo-reconcile" {
		t.Errorf("reconciler key %q", k)
	}
}
