package runs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

const readme = "# calc\n\n## Usage\n\nTODO\n\n## Contributing\n\nTODO\n"

const readmeBoth = "# calc\n\n## Usage\n\nRun it.\n\n## Contributing\n\nSend patches.\n"

// mergeFileReconciler is a neutral command reconciler: it re-applies the
// task's change to each overlapping path with a three-way text merge.
const mergeFileReconciler = `set -e
tmp=$(mktemp -d)
printf '%s\n' "$APIARY_RECONCILE_PATHS" | while IFS= read -r p; do
  [ -n "$p" ] || continue
  git show "$APIARY_RECONCILE_BASE:$p" > "$tmp/base"
  git show "$APIARY_RECONCILE_CANDIDATE:$p" > "$tmp/theirs"
  git merge-file "$p" "$tmp/base" "$tmp/theirs"
done
rm -rf "$tmp"
`

func reconcilePlan(t *testing.T, reconciler string) string {
	script := filepath.Join(t.TempDir(), "reconcile.sh")
	if err := os.WriteFile(script, []byte(reconciler), 0o755); err != nil {
		t.Fatal(err)
	}
	return `version: 1
max_parallel: 2
agents:
  usage: {kind: command, argv: ["sh", "-c", "sed -i '0,/^TODO$/s//Run it./' README.md"]}
  contrib: {kind: command, argv: ["sh", "-c", "sed -i '$ s/^TODO$/Send patches./' README.md"]}
  reconciler: {kind: command, argv: ["sh", "` + script + `"]}
tasks:
  - {id: docs-a, objective: document usage, agent: usage, write_scope: [README.md], checks: ["grep -q '^# calc' README.md"]}
  - {id: docs-b, objective: document contributing, agent: contrib, write_scope: [README.md], checks: ["grep -q '^# calc' README.md"]}
`
}

// TestReconcile: two tasks change the same file from one base; the second
// to integrate goes to the reconciler, whose result is integrated as a
// merge of the head and the task's own commit.
func TestReconcile(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README.md": readme})
	rep := start(t, repo, reconcilePlan(t, mergeFileReconciler), Config{ReconcileAgent: "reconciler"})
	if !rep.OK() {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	got := integrationsOf(t, repo, rep)
	if len(got) != 2 || !strings.HasSuffix(got[0], ":fast-forward") || !strings.HasSuffix(got[1], ":reconciled") {
		t.Fatalf("integrations %v", got)
	}
	if s := gittest.Show(t, repo, "main", "README.md"); s != readmeBoth {
		t.Errorf("README.md =\n%s\nwant\n%s", s, readmeBoth)
	}
	second := strings.TrimSuffix(got[1], ":reconciled")
	rc := receipt(t, repo, rep.RunID, second)
	if *rc.Integrated != attempt.Reconciled || rc.Attempt != 1 {
		t.Errorf("receipt %+v", rc)
	}
	// The reconciled commit merges the head with the task's own candidate.
	parents := strings.Fields(gittest.Git(t, repo.Dir(), "rev-list", "--parents", "-n1", "main"))
	if len(parents) != 3 {
		t.Fatalf("reconciled commit parents %v", parents)
	}
	if s := gittest.Show(t, repo, parents[2], "README.md"); s == readmeBoth || s == readme {
		t.Errorf("second parent is not the task's own change: %q", s)
	}
	// Its envelope named the conflict by reference.
	b, err := os.ReadFile(filepath.Join(rundir.Path(repo.Dir(), rep.RunID), "tasks", second, "reconcile-1.envelope.json"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := envelope.DecodeEnvelope(b)
	if err != nil || e.Reconcile == nil || !slices.Equal(e.Reconcile.Paths, []string{"README.md"}) || e.Reconcile.Candidate != parents[2] {
		t.Errorf("reconcile envelope %+v, %v", e.Reconcile, err)
	}
	if tr := rep.Task(second); tr.Reconciliations != 1 {
		t.Errorf("report %+v", tr)
	}
}

// TestReconcileFailsThenRerun: when the reconciler fails, the task is run
// again on the new head, where it no longer overlaps anything.
func TestReconcileFailsThenRerun(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README.md": readme})
	rep := start(t, repo, reconcilePlan(t, "exit 3\n"), Config{ReconcileAgent: "reconciler"})
	if !rep.OK() {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	got := integrationsOf(t, repo, rep)
	if len(got) != 2 || got[0] == got[1] || !strings.HasSuffix(got[1], ":fast-forward") {
		t.Fatalf("integrations %v", got)
	}
	second := strings.TrimSuffix(got[1], ":fast-forward")
	if rc := receipt(t, repo, rep.RunID, second); rc.Attempt != 2 || !strings.Contains(rc.Summary, "re-run on the new head") {
		t.Errorf("receipt %+v", rc)
	}
	if s := gittest.Show(t, repo, "main", "README.md"); s != readmeBoth {
		t.Errorf("README.md =\n%s", s)
	}
}
