package runs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// TestResumeRestoresReceipt: a task whose commit is on the branch but whose
// receipt is missing (a crash between the CAS and the receipt) gets its
// receipt from the trailers on resume, and nothing is integrated twice.
func TestResumeRestoresReceipt(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	src := `version: 1
agents:
  sh: {kind: command, argv: ["sh", "-c", "echo $APIARY_TASK > $APIARY_TASK.txt"]}
tasks:
  - {id: a, objective: a, agent: sh, write_scope: [a.txt]}
  - {id: b, objective: b, agent: sh, write_scope: [b.txt], deps: [a]}
`
	rep := start(t, repo, src, Config{})
	if !rep.OK() {
		t.Fatalf("first run: %+v", rep.Tasks)
	}
	head := gittest.Git(t, repo.Dir(), "rev-parse", "main")
	if err := os.Remove(filepath.Join(rundir.Path(repo.Dir(), rep.RunID), "tasks", "b", "receipt.json")); err != nil {
		t.Fatal(err)
	}
	var evs eventLog
	again, err := Resume(boundedCtx(t), Config{Repo: repo, OnEvent: evs.add}, rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !again.OK() || evs.count(rundir.EvAttemptStarted) != 0 || evs.count(rundir.EvIntegrated) != 0 {
		t.Fatalf("resume ran something: %+v; %d attempts", again.Tasks, evs.count(rundir.EvAttemptStarted))
	}
	if now := gittest.Git(t, repo.Dir(), "rev-parse", "main"); now != head {
		t.Errorf("branch moved from %s to %s", head, now)
	}
	rc := receipt(t, repo, rep.RunID, "b")
	if rc.Status != envelope.StatusSucceeded || rc.Commit != head || *rc.Integrated != attempt.FastForward || !slices.Equal(rc.ChangedPaths, []string{"b.txt"}) {
		t.Errorf("restored receipt %+v", rc)
	}
	if got := integrationsOf(t, repo, again); !slices.Equal(got, []string{"a:fast-forward", "b:fast-forward"}) {
		t.Errorf("integrations %v", got)
	}
	if _, err := Resume(boundedCtx(t), Config{Repo: repo}, "no-such-run"); !errors.Is(err, ErrNoRun) {
		t.Errorf("unknown run: %v", err)
	}
}

// TestResumeAfterInterrupt: a run cancelled with one task integrated and
// one in flight resumes: the integrated task is not run again, the other is
// re-run after the stale worktree and branch its records name are removed,
// and each task is on the branch once.
func TestResumeAfterInterrupt(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	gate := filepath.Join(t.TempDir(), "go")
	src := `version: 1
max_parallel: 2
agents:
  fast: {kind: command, argv: ["sh", "-c", "echo fast > fast.txt"]}
  after: {kind: command, argv: ["sh", "-c", "echo after > after.txt"]}
  slow: {kind: command, argv: ["sh", "-c", "while [ ! -e ` + gate + ` ]; do sleep 0.02; done; echo slow > slow.txt"]}
tasks:
  - {id: fast, objective: f, agent: fast, write_scope: [fast.txt]}
  - {id: slow, objective: s, agent: slow, write_scope: [slow.txt]}
  - {id: after, objective: a, agent: after, write_scope: [after.txt], deps: [slow]}
`
	ctx, cancel := context.WithCancel(boundedCtx(t))
	defer cancel()
	started := false
	onEvent := func(ev Event) {
		if ev.Kind == rundir.EvAttemptStarted && ev.Task == "slow" {
			started = true
		}
		if ev.Kind == rundir.EvTaskDone && ev.Task == "fast" && started {
			cancel()
		}
	}
	rep, err := Start(ctx, Config{Repo: repo, OnEvent: onEvent}, NewRun{PlanFile: "plan.yaml", PlanData: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != "interrupted" || rep.Task("fast").Status != "succeeded" || rep.Task("slow").Status != "cancelled" {
		t.Fatalf("interrupted run: %s %+v", rep.Status, rep.Tasks)
	}
	// Simulate what kill -9 leaves: the in-flight attempt's worktree and
	// branch, recorded in the events.
	stale := filepath.Join(repo.Dir(), rundir.StateDir, "worktrees", rep.RunID, "slow-9")
	branch := branchName(rep.RunID, "slow")
	evs, _, _ := rundir.Open(repo.Dir(), rep.RunID).Events()
	appendEvent(t, repo.Dir(), rep.RunID, Event{Seq: evs[len(evs)-1].Seq + 1, Kind: rundir.EvWorktree, Task: "slow", Attempt: 9, Path: stale, Branch: branch})
	if ok, _ := repo.BranchExists(t.Context(), branch); ok {
		gittest.Git(t, repo.Dir(), "branch", "-D", branch)
	}
	gittest.Git(t, repo.Dir(), "worktree", "add", "--quiet", "-b", branch, stale, rep.StartHead)
	gittest.Git(t, repo.Dir(), "branch", "unrelated", rep.StartHead) // not apiary's: must survive

	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var log eventLog
	again, err := Resume(boundedCtx(t), Config{Repo: repo, OnEvent: log.add}, rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !again.OK() {
		t.Fatalf("resumed run: %s %+v", again.Status, again.Tasks)
	}
	got := integrationsOf(t, repo, again)
	slices.Sort(got)
	if !slices.Equal(got, []string{"after:fast-forward", "fast:fast-forward", "slow:fast-forward"}) && !slices.Equal(got, []string{"after:fast-forward", "fast:fast-forward", "slow:merge"}) {
		t.Errorf("integrations %v", got)
	}
	for _, ev := range log.evs {
		if ev.Kind == rundir.EvAttemptStarted && ev.Task == "fast" {
			t.Error("fast ran again")
		}
	}
	if rc := receipt(t, repo, rep.RunID, "slow"); rc.Attempt != 2 {
		t.Errorf("slow attempt %d, want 2", rc.Attempt)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale worktree left: %v", err)
	}
	if ok, _ := repo.BranchExists(t.Context(), "unrelated"); !ok {
		t.Error("a branch apiary did not create was deleted")
	}
}

// appendEvent adds a line to a run's events.jsonl, as a crashed process
// would have left it.
func appendEvent(t *testing.T, root, run string, ev Event) {
	t.Helper()
	ev.Run = run
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(rundir.Path(root, run), "events.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}
