package rundir

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLayout: the path API names the run directory's files as
// docs/ARCHITECTURE.md lays them out: .apiary/runs/RUN/{run.json,
// plan.yaml, events.jsonl, lock, tasks/NAME/{envelope.json, receipt.json,
// attempt-N.log, checks/, children/}}, plus the extra files of attempts
// after the first and of reconciliations.
func TestLayout(t *testing.T) {
	t.Parallel()
	run := Open("/repo", "r1")
	task := run.Task("build")
	for _, tt := range []struct{ got, want string }{
		{run.Dir(), "/repo/.apiary/runs/r1"},
		{run.RecordPath(), "/repo/.apiary/runs/r1/run.json"},
		{run.PlanPath(), "/repo/.apiary/runs/r1/plan.yaml"},
		{run.EventsPath(), "/repo/.apiary/runs/r1/events.jsonl"},
		{run.Planner().Dir(), "/repo/.apiary/runs/r1/planner"},
		{run.Planner().ReceiptPath(), "/repo/.apiary/runs/r1/planner/receipt.json"},
		{task.Dir(), "/repo/.apiary/runs/r1/tasks/build"},
		{task.EnvelopePath(), "/repo/.apiary/runs/r1/tasks/build/envelope.json"},
		{task.AttemptEnvelopePath(2), "/repo/.apiary/runs/r1/tasks/build/envelope-2.json"},
		{task.ReconcileEnvelopePath(3), "/repo/.apiary/runs/r1/tasks/build/reconcile-3.envelope.json"},
		{task.ReceiptPath(), "/repo/.apiary/runs/r1/tasks/build/receipt.json"},
		{task.OrphanedReceiptPath(), "/repo/.apiary/runs/r1/tasks/build/receipt.orphaned.json"},
		{task.LogPath(1), "/repo/.apiary/runs/r1/tasks/build/attempt-1.log"},
		{task.ReconcileLogPath(1), "/repo/.apiary/runs/r1/tasks/build/reconcile-1.log"},
		{task.ChecksDir(), "/repo/.apiary/runs/r1/tasks/build/checks"},
		{task.ChildrenDir(), "/repo/.apiary/runs/r1/tasks/build/children"},
		{task.ChildPath("lint"), "/repo/.apiary/runs/r1/tasks/build/children/lint.json"},
		{LogName(12), "attempt-12.log"},
		{ReconcileLogName(2), "reconcile-2.log"},
		{ChildName("lint"), "children/lint.json"},
		{TaskIn("/merge/r1", "build").ReceiptPath(), "/merge/r1/tasks/build/receipt.json"},
	} {
		if got := filepath.ToSlash(tt.got); got != tt.want {
			t.Errorf("got %s, want %s", got, tt.want)
		}
	}
	if TaskIn(run.Dir(), "build") != task {
		t.Error("TaskIn(run.Dir(), name) is not run.Task(name)")
	}
}

// TestTaskChildren: the names of the kept child envelopes, sorted and
// relative to the task's directory (as receipts list them); none without
// a children directory; other files and directories left out.
func TestTaskChildren(t *testing.T) {
	t.Parallel()
	task := Open(t.TempDir(), "r1").Task("parent")
	if got, err := task.Children(); err != nil || got != nil {
		t.Fatalf("Children() of a task without children = %q, %v", got, err)
	}
	for _, name := range []string{"b", "a"} {
		if err := WriteFile(task.ChildPath(name), []byte("{}\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteFile(filepath.Join(task.ChildrenDir(), "notes.txt"), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(task.ChildrenDir(), "dir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := task.Children()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{ChildName("a"), ChildName("b")}; !slices.Equal(got, want) {
		t.Errorf("Children() = %q, want %q", got, want)
	}
}
