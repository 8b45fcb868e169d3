//go:build unix

package runs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// rewriteEvents rewrites run id's event log through edit.
func rewriteEvents(t *testing.T, root, id string, edit func(*Event)) {
	t.Helper()
	evs, _, err := rundir.Open(root, id).Events()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range evs {
		edit(&evs[i])
		line, err := json.Marshal(evs[i])
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(rundir.Open(root, id).EventsPath(), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReapKeepFailed: a failed task's branch is kept for KeepFailed after
// the task failed, by the age its records give it: of two failed tasks,
// the one whose failure is backdated past the retention goes, the other —
// younger than the retention — stays ("within retention") until the clock
// passes its failure plus the retention; the default retention is a week.
func TestReapKeepFailed(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	// Each writes outside its write scope: the gate fails it, and its
	// branch with the commit stays to look at.
	rep := start(t, repo, `version: 1
agents:
  sh: {kind: command, argv: ["sh", "-c", "echo x > $APIARY_TASK.txt; echo y > outside.txt"]}
tasks:
  - {id: old, objective: x, agent: sh, write_scope: [old.txt]}
  - {id: young, objective: x, agent: sh, write_scope: [young.txt]}
  - {id: blank, objective: x, agent: sh, write_scope: [blank.txt]}
`, Config{MaxAttempts: 1})
	id := rep.RunID
	failedAt := map[string]time.Time{}
	evs, _, _ := rundir.Open(repo.Dir(), id).Events()
	for _, ev := range evs {
		if ev.Kind == rundir.EvTaskDone && ev.Status == "failed" {
			failedAt[ev.Task] = ev.Time
		}
	}
	if len(failedAt) != 3 {
		t.Fatalf("failed tasks %v; tasks %+v", failedAt, rep.Tasks)
	}
	branches := func() []string {
		bs, err := repo.Branches(t.Context(), "apiary/"+id+"/")
		if err != nil {
			t.Fatal(err)
		}
		return bs
	}
	oldB, youngB, blankB := branchName(id, "old"), branchName(id, "young"), branchName(id, "blank")
	if bs := branches(); !slices.Equal(bs, []string{blankB, oldB, youngB}) {
		t.Fatalf("branches after the run: %v, want the failed tasks' %v, %v and %v", bs, blankB, oldB, youngB)
	}
	const keep = 48 * time.Hour
	rewriteEvents(t, repo.Dir(), id, func(ev *Event) {
		switch {
		case ev.Kind == rundir.EvTaskDone && ev.Task == "old":
			ev.Time = ev.Time.Add(-3 * 24 * time.Hour)
		case ev.Kind == rundir.EvTaskDone && ev.Task == "blank":
			ev.Time = time.Time{} // no time: counted from the run's last event, not from zero
		}
	})
	young := failedAt["young"]
	at := func(d time.Duration) func() time.Time { return func() time.Time { return young.Add(d) } }
	branchesReaped := func(rr supervise.ReapReport) []string {
		var out []string
		for _, rm := range rr.Removed {
			if rm.Err != nil {
				t.Errorf("removing %s %s: %v", rm.Item.Kind, rm.Item.ID, rm.Err)
			}
			if rm.Item.Kind == supervise.KindBranch {
				out = append(out, rm.Item.ID)
			}
		}
		return out
	}

	// The default retention, a week, keeps both, the backdated one too.
	rr, err := Reap(t.Context(), repo, ReapOptions{DryRun: true, Now: at(time.Hour)})
	if got := branchesReaped(rr); err != nil || len(got) != 0 {
		t.Errorf("with the default retention: %v %v", got, err)
	}
	// Past the grace, within the retention of the younger one: only the
	// backdated one goes.
	rr, err = Reap(t.Context(), repo, ReapOptions{KeepFailed: keep, Now: at(time.Hour)})
	if got := branchesReaped(rr); err != nil || !slices.Equal(got, []string{oldB}) {
		t.Errorf("an hour after the failure: removed %v %v, want %v", got, err, oldB)
	}
	kept := ""
	for _, k := range rr.Kept {
		if k.Item.Kind == supervise.KindBranch && k.Item.ID == youngB {
			kept = k.Reason
		}
	}
	if kept != "within retention" {
		t.Errorf("the younger failed task's branch kept as %q", kept)
	}
	if bs := branches(); !slices.Equal(bs, []string{blankB, youngB}) {
		t.Errorf("branches: %v, want only %v and %v", bs, blankB, youngB)
	}
	// Just before its retention ends it is still there; just after, it goes.
	if rr, err := Reap(t.Context(), repo, ReapOptions{KeepFailed: keep, Now: at(keep - time.Minute)}); err != nil || len(branchesReaped(rr)) != 0 {
		t.Errorf("a minute before the retention ends: %v %v", branchesReaped(rr), err)
	}
	rr, err = Reap(t.Context(), repo, ReapOptions{KeepFailed: keep, Now: at(keep + time.Minute)})
	if got := branchesReaped(rr); err != nil || !slices.Equal(got, []string{blankB, youngB}) {
		t.Errorf("past the retention: removed %v %v, want %v and %v", got, err, blankB, youngB)
	}
	if bs := branches(); len(bs) != 0 {
		t.Errorf("branches left: %v", bs)
	}
	for _, b := range []string{"main"} {
		if ok, _ := repo.BranchExists(t.Context(), b); !ok {
			t.Errorf("branch %s deleted", b)
		}
	}
}

// TestReapEmptyWorktreeDirs: empty directories under .apiary/worktrees that
// no record names — the directory of a run whose records are gone, an
// empty one in a dead run's directory — go once they have been empty for
// the grace period; a directory with anything in it, one of a live run and
// one still within the grace period stay.
func TestReapEmptyWorktreeDirs(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	rep := start(t, repo, `version: 1
agents:
  sh: {kind: command, argv: ["sh", "-c", "echo x > x.txt"]}
tasks:
  - {id: t1, objective: x, agent: sh, write_scope: [x.txt]}
`, Config{})
	if !rep.OK() {
		t.Fatalf("run %s", rep.Status)
	}
	wts := rundir.WorktreesDir(repo.Dir())
	dead := filepath.Join(wts, rep.RunID)
	gone := filepath.Join(wts, "20260101-000000-000009") // no run directory: a swarm merge role's, say
	live := filepath.Join(wts, "20260101-000000-000008")
	dirs := map[string]string{
		"dead run, empty":        filepath.Join(dead, "t1-7"),
		"dead run, not empty":    filepath.Join(dead, "t1-8"),
		"unrecorded run, nested": filepath.Join(gone, "check-1"),
		"live run":               filepath.Join(live, "t1-1"),
		"young":                  filepath.Join(wts, "20260101-000000-000007", "t1-1"),
		"not a run id":           filepath.Join(wts, ".other", "x"),
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gittest.WriteFiles(t, dirs["dead run, not empty"], map[string]string{"notes.txt": "mine\n"})
	// A live run: its lock is held.
	lg := rundir.NewLog(repo.Dir(), "20260101-000000-000008", time.Now, nil)
	if err := lg.Lock(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	// Everything was made a while ago but for the young one.
	long := time.Now().Add(-time.Hour)
	for name, d := range dirs {
		if name == "young" {
			continue
		}
		for p := d; p != wts; p = filepath.Dir(p) {
			if err := os.Chtimes(p, long, long); err != nil {
				t.Fatal(err)
			}
		}
	}
	rr, err := Reap(t.Context(), repo, ReapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	for _, rm := range rr.Removed {
		if rm.Err != nil {
			t.Errorf("removing %s: %v", rm.Item.ID, rm.Err)
		}
		if rm.Item.Kind == supervise.KindDirectory {
			rel, _ := filepath.Rel(wts, rm.Item.ID)
			removed = append(removed, rel)
		}
	}
	slices.Sort(removed)
	want := []string{filepath.Base(gone), filepath.Join(filepath.Base(gone), "check-1"), filepath.Join(rep.RunID, "t1-7")}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for name, d := range dirs {
		_, err := os.Stat(d)
		if gone := name == "dead run, empty" || name == "unrecorded run, nested"; gone != os.IsNotExist(err) {
			t.Errorf("%s (%s): stat %v", name, d, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dirs["dead run, not empty"], "notes.txt")); err != nil || string(b) != "mine\n" {
		t.Errorf("a file in a directory no record names: %q %v", b, err)
	}
}
