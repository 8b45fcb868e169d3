package runs

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// touchAgent waits for GO, then changes a.txt: the test touches files of
// the checkout meanwhile.
const touchAgent = `until [ -e "$GO" ]; do sleep 0.01; done; echo changed > a.txt`

func touchPlan(flag string) string {
	return `version: 1
agents:
  sh: {kind: command, argv: ["sh", "-c", "` + strings.ReplaceAll(touchAgent, `"`, `\"`) + `"], env: {GO: "` + flag + `"}}
tasks:
  - {id: a, objective: a, agent: sh, write_scope: [a.txt]}
`
}

// status is `git status --porcelain` of the main checkout, one entry a
// line.
func status(t *testing.T, dir string) []string {
	t.Helper()
	cmd := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no")
	cmd.Env = append(os.Environ(), gittest.Env...)
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	out := strings.TrimRight(string(b), "\n") // not the leading space: it is the X column
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// staged reports entries with a change in the index (X column).
func staged(entries []string) []string {
	var out []string
	for _, e := range entries {
		if len(e) > 0 && e[0] != ' ' && e[0] != '?' {
			out = append(out, e)
		}
	}
	return out
}

// TestCheckoutTouchedDuringRun: files of the checked-out integration
// branch are touched and edited while the run goes on. When the run ends,
// the checkout holds the integrated work in its index and files, with the
// user's edit to a file the run did not change kept and unstaged, and
// nothing staged: a plain `git commit` would commit nothing.
func TestCheckoutTouchedDuringRun(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	dir := repo.Dir()
	flag := filepath.Join(t.TempDir(), "go")
	w := newWaiter()
	wait := startBG(t, repo, "touched", touchPlan(flag), Config{OnEvent: w.add})
	w.waitFor(t, "the agent", func(evs []Event) bool { return countKind(evs, "agent_started", "a") > 0 })
	// Touch the file the run is about to change (same content, new time),
	// and edit another.
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(filepath.Join(dir, "a.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	gittest.WriteFiles(t, dir, map[string]string{"b.txt": "my edit\n"})
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := wait()
	if !rep.OK() || rep.Checkout == nil || !rep.Checkout.Synced {
		t.Fatalf("run %s, checkout %+v", rep.Status, rep.Checkout)
	}
	st := status(t, dir)
	if s := staged(st); len(s) > 0 {
		t.Errorf("staged after the run (a plain commit would revert the run's work): %v", s)
	}
	if len(st) != 1 || st[0] != " M b.txt" {
		t.Errorf("git status = %q, want only the user's unstaged edit of b.txt", st)
	}
	for f, want := range map[string]string{"a.txt": "changed\n", "b.txt": "my edit\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); string(b) != want {
			t.Errorf("%s = %q, want %q", f, b, want)
		}
	}
	if head := gittest.Git(t, dir, "symbolic-ref", "--short", "HEAD"); head != "main" {
		t.Errorf("HEAD is %q", head)
	}
}

// TestCheckoutConflictingEdit: the user edits, during the run, the very
// file the run changes. The user's file is kept as it is; rather than
// leave the branch's checkout with a staged reversal, HEAD is detached at
// the commit the files match, the branch keeps the run's work, and the
// report says the checkout was not brought along and how to finish.
func TestCheckoutConflictingEdit(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "a\n"})
	dir := repo.Dir()
	start := gittest.Git(t, dir, "rev-parse", "HEAD")
	flag := filepath.Join(t.TempDir(), "go")
	w := newWaiter()
	wait := startBG(t, repo, "conflicting", touchPlan(flag), Config{OnEvent: w.add})
	w.waitFor(t, "the agent", func(evs []Event) bool { return countKind(evs, "agent_started", "a") > 0 })
	gittest.WriteFiles(t, dir, map[string]string{"a.txt": "mine\n"})
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := wait()
	if !rep.OK() {
		t.Fatalf("run %s", rep.Status)
	}
	c := rep.Checkout
	if c == nil || c.Synced || !strings.Contains(c.Reason, "a.txt") || !strings.Contains(c.Hint, "git checkout main") {
		t.Fatalf("checkout %+v", c)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "checkout: NOT brought along") {
		t.Errorf("the report does not say so: %v\n%s", err, text.String())
	}
	if s := staged(status(t, dir)); len(s) > 0 {
		t.Errorf("staged after the run: %v", s)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "mine\n" {
		t.Errorf("the user's edit was lost: %q", b)
	}
	if head := gittest.Git(t, dir, "rev-parse", "HEAD"); head != start {
		t.Errorf("HEAD at %s, want the start %s (detached)", head, start)
	}
	if gittest.Show(t, repo, "main", "a.txt") != "changed\n" {
		t.Error("the branch lost the run's work")
	}
}

// TestReapRepairsCheckout: a run that died between moving its branch and
// bringing the checkout along leaves the checkout's index and files at an
// older commit of the branch — the staged reversal. apiary reap finds it
// and brings the checkout along.
func TestReapRepairsCheckout(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "a\n"})
	dir := repo.Dir()
	flag := filepath.Join(t.TempDir(), "go")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := start(t, repo, touchPlan(flag), Config{})
	if !rep.OK() {
		t.Fatalf("run %s", rep.Status)
	}
	// What a crash before the sync leaves: index and files at the start.
	gittest.Git(t, dir, "read-tree", "--reset", "-u", rep.StartHead)
	if s := staged(status(t, dir)); len(s) == 0 {
		t.Fatal("no staged reversal to repair")
	}
	later := func() time.Time { return time.Now().Add(time.Hour) }
	rr, err := Reap(t.Context(), repo, ReapOptions{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	repaired := false
	for _, rm := range rr.Removed {
		repaired = repaired || rm.Item.Kind == supervise.KindCheckout && rm.Err == nil
	}
	if !repaired {
		t.Errorf("reap did not repair the checkout: %+v", rr.Removed)
	}
	if st := status(t, dir); len(st) > 0 {
		t.Errorf("git status after the reap: %v", st)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "changed\n" {
		t.Errorf("a.txt = %q", b)
	}
	// And a checkout that is fine is left alone.
	rr, _ = Reap(t.Context(), repo, ReapOptions{Now: later})
	for _, rm := range rr.Removed {
		if rm.Item.Kind == supervise.KindCheckout {
			t.Errorf("a synced checkout was touched: %+v", rm)
		}
	}
}

// TestResumeRepairsCheckout: the crash of TestReapRepairsCheckout — the
// run killed after it moved the checked-out integration branch and before
// it brought the checkout's index and files along, so that its events end
// before the sync and the run's end — is repaired by resuming the run:
// nothing runs again, and afterwards git status shows no staged reversal
// and the files hold the run's work.
func TestResumeRepairsCheckout(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	dir := repo.Dir()
	flag := filepath.Join(t.TempDir(), "go")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := start(t, repo, touchPlan(flag), Config{})
	if !rep.OK() {
		t.Fatalf("run %s", rep.Status)
	}
	// What the kill leaves: the events up to the integration, and the
	// checkout's index and files at the start, with a change of the
	// user's own to a file the run did not touch.
	evs, _, err := rundir.Open(dir, rep.RunID).Events()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == rundir.EvCheckoutSynced || ev.Kind == rundir.EvRunFinished {
			break
		}
		line, _ := json.Marshal(ev)
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(rundir.Open(dir, rep.RunID).EventsPath(), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "read-tree", "--reset", "-u", rep.StartHead)
	gittest.WriteFiles(t, dir, map[string]string{"b.txt": "my edit\n"})
	if s := staged(status(t, dir)); len(s) == 0 {
		t.Fatal("no staged reversal to repair")
	}
	var el eventLog
	again, err := Resume(boundedCtx(t), Config{Repo: repo, OnEvent: el.add}, rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !again.OK() || el.count(rundir.EvAttemptStarted) != 0 {
		t.Fatalf("resume: %s, %d attempts", again.Status, el.count(rundir.EvAttemptStarted))
	}
	if c := again.Checkout; c == nil || !c.Synced {
		t.Errorf("the resumed run's checkout: %+v", c)
	}
	st := status(t, dir)
	if s := staged(st); len(s) > 0 {
		t.Errorf("staged after the resume (a plain commit would revert the run's work): %v", s)
	}
	if len(st) != 1 || st[0] != " M b.txt" {
		t.Errorf("git status = %q, want only the user's unstaged edit of b.txt", st)
	}
	for f, want := range map[string]string{"a.txt": "changed\n", "b.txt": "my edit\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); string(b) != want {
			t.Errorf("%s = %q, want %q", f, b, want)
		}
	}
	if head := gittest.Git(t, dir, "symbolic-ref", "--short", "HEAD"); head != "main" {
		t.Errorf("HEAD is %q", head)
	}
}
