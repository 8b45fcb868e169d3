package runs

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// attemptsOnBranch lists the Apiary-Attempt trailers of the run's
// integrations, oldest first.
func attemptsOnBranch(t *testing.T, repo *git.Repo, rep *Report) []string {
	t.Helper()
	log, err := repo.FirstParentLog(t.Context(), rep.StartHead, "refs/heads/"+rep.IntegrationBranch)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(log) - 1; i >= 0; i-- {
		if n, ok := git.TrailerValue(log[i].Trailers, attempt.TrailerAttempt); ok {
			out = append(out, n)
		}
	}
	return out
}

// TestHedge: the first attempt is slow; after hedge_after_s a second
// attempt starts with the hedge profile, passes its gates first and wins;
// the slow one is cancelled (its process gone) and never integrated.
func TestHedge(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	src := `version: 1
agents:
  slow: {kind: command, argv: ["sh", "-c", "echo slow > out.txt; sleep 1000"]}
  fast: {kind: command, argv: ["sh", "-c", "echo fast > out.txt"]}
tasks:
  - {id: h, objective: h, agent: slow, hedge_agent: fast, hedge_after_s: 0.2, write_scope: [out.txt], checks: ["test -s out.txt"]}
`
	var evs eventLog
	rep := start(t, repo, src, Config{OnEvent: evs.add})
	if !rep.OK() {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	if got := gittest.Show(t, repo, "main", "out.txt"); got != "fast\n" {
		t.Errorf("out.txt = %q", got)
	}
	if got := attemptsOnBranch(t, repo, rep); !slices.Equal(got, []string{"2"}) {
		t.Errorf("attempts integrated %v", got)
	}
	if evs.count(rundir.EvHedged) != 1 || evs.count(rundir.EvSpeculation) != 1 {
		t.Errorf("events: %d hedged, %d speculation", evs.count(rundir.EvHedged), evs.count(rundir.EvSpeculation))
	}
	if ps := procsOf(rep.RunID, ""); len(ps) != 0 {
		t.Errorf("the losing attempt's processes are left: %v", ps)
	}
	if wts, _ := repo.Worktrees(t.Context()); len(wts) != 1 {
		t.Errorf("worktrees left: %+v", wts)
	}
}

// TestQuorum: three speculative attempts, two must pass; attempt 1's
// result fails its checks, 2 and 3 pass: the task continues with the first
// to pass, and only that one reaches the branch.
func TestQuorum(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	src := `version: 1
max_parallel: 3
agents:
  q: {kind: command, argv: ["sh", "-c", "if [ $APIARY_ATTEMPT = 1 ]; then echo bad > out.txt; else sleep 0.5; echo good $APIARY_ATTEMPT > out.txt; fi"]}
tasks:
  - {id: q, objective: q, agent: q, quorum: {n: 3, k: 2}, write_scope: [out.txt], checks: ["grep -q good out.txt"]}
`
	var evs eventLog
	rep := start(t, repo, src, Config{OnEvent: evs.add})
	if !rep.OK() {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	got := attemptsOnBranch(t, repo, rep)
	if len(got) != 1 || got[0] == "1" {
		t.Errorf("integrated attempts %v", got)
	}
	if c := gittest.Show(t, repo, "main", "out.txt"); !strings.HasPrefix(c, "good ") {
		t.Errorf("out.txt = %q", c)
	}
	if evs.count(rundir.EvAttemptStarted) != 3 || evs.count(rundir.EvGateRejected) != 1 {
		t.Errorf("%d attempts, %d rejected", evs.count(rundir.EvAttemptStarted), evs.count(rundir.EvGateRejected))
	}

	// When two of three fail, the quorum is lost and the task fails.
	repo2 := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	lost := strings.Replace(src, "if [ $APIARY_ATTEMPT = 1 ]", "if [ $APIARY_ATTEMPT != 3 ]", 1)
	rep2 := start(t, repo2, lost, Config{})
	if rc := receipt(t, repo2, rep2.RunID, "q"); rc.Status != envelope.StatusFailed || !strings.Contains(rc.Reason, "too few speculative attempts passed") {
		t.Errorf("lost quorum: %s %q", rc.Status, rc.Reason)
	}
	if got := attemptsOnBranch(t, repo2, rep2); len(got) != 0 {
		t.Errorf("a lost quorum integrated %v", got)
	}
}

// TestRunHedgeAfter: Config.HedgeAfter hedges a task that asks for no
// hedge of its own: the slow first attempt loses to the second, which is
// integrated alone; a task with its own quorum is left to it, and the run
// records the default for a resume.
func TestRunHedgeAfter(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	src := `version: 1
max_parallel: 3
agents:
  w: {kind: command, argv: ["sh", "-c", "if [ $APIARY_ATTEMPT = 1 ]; then echo slow > out.txt; sleep 1000; else echo fast $APIARY_ATTEMPT > out.txt; fi"]}
  q: {kind: command, argv: ["sh", "-c", "echo quorum > q.txt"]}
tasks:
  - {id: h, objective: h, agent: w, write_scope: [out.txt], checks: ["test -s out.txt"]}
  - {id: q, objective: q, agent: q, quorum: {n: 2, k: 1}, write_scope: [q.txt], checks: ["test -s q.txt"]}
`
	var evs eventLog
	rep := start(t, repo, src, Config{OnEvent: evs.add, HedgeAfter: 200 * time.Millisecond})
	if !rep.OK() {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	if got := gittest.Show(t, repo, "main", "out.txt"); got != "fast 2\n" {
		t.Errorf("out.txt = %q, want the hedge's", got)
	}
	if n := evs.count(rundir.EvHedged); n != 1 {
		t.Errorf("%d hedges, want 1 (task h only: q has a quorum of its own)", n)
	}
	if ps := procsOf(rep.RunID, ""); len(ps) != 0 {
		t.Errorf("the losing attempt's processes are left: %v", ps)
	}
	rec, err := rundir.Open(repo.Dir(), rep.RunID).Record()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Options.HedgeAfterS != 0.2 {
		t.Errorf("run.json hedge_after_s = %v, want 0.2", rec.Options.HedgeAfterS)
	}
}
