package runs

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

func progressEvents() []Event {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	return []Event{
		{Time: at(0), Run: "r1", Kind: rundir.EvRunStarted, Tasks: 2, Branch: "main"},
		{Time: at(0.1), Kind: rundir.EvAttemptStarted, Task: "a", Attempt: 1, Role: attempt.RoleWorker, Base: "0123456789abcdef"},
		{Time: at(0.2), Kind: rundir.EvAttemptStarted, Task: "b", Attempt: 1, Role: attempt.RoleWorker, Base: "0123456789abcdef"},
		{Time: at(1.5), Kind: rundir.EvAttemptFinished, Task: "a", Attempt: 1, Role: attempt.RoleWorker},
		{Time: at(1.6), Kind: rundir.EvIntegrated, Task: "a", Integrated: attempt.FastForward, Commit: "fedcba9876543210"},
		{Time: at(1.7), Kind: rundir.EvTaskDone, Task: "a", Status: "succeeded"},
		{Time: at(2.0), Kind: rundir.EvGateRejected, Task: "b", Gate: &envelope.GateReason{Gate: "scope", File: "x", Detail: "outside"}},
		{Time: at(2.1), Kind: rundir.EvTaskDone, Task: "b", Status: "failed", Reason: "rejected"},
		{Time: at(2.2), Kind: rundir.EvRunFinished, Status: "failed"},
	}
}

// TestProgressLines: without a terminal, one timestamped line per notable
// event and no control characters.
func TestProgressLines(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := &Progress{W: &b}
	for _, ev := range progressEvents() {
		p.Event(ev)
	}
	p.Close()
	want := []string{
		"   0.0s run r1: 2 tasks on main",
		"   0.1s a: attempt 1 started on 0123456789",
		"   0.2s b: attempt 1 started on 0123456789",
		"   1.6s a: integrated (fast-forward) as fedcba9876",
		"   2.0s b: rejected by gate scope x: outside",
		"   2.1s b: failed: rejected",
		"   2.2s run failed",
	}
	if got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", b.String(), strings.Join(want, "\n"))
	}
}

// TestProgressBar: on a terminal the bar is redrawn in place and shows
// progress and what runs; Close clears it.
func TestProgressBar(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := &Progress{W: &b, TTY: true}
	evs := progressEvents()
	for _, ev := range evs[:6] {
		p.Event(ev)
	}
	out := b.String()
	if !strings.Contains(out, "\r\033[K[############............] 1/2 done · running: b") {
		t.Errorf("bar missing:\n%q", out)
	}
	p.Close()
	if !strings.HasSuffix(b.String(), "\r\033[K") {
		t.Errorf("Close left the bar: %q", b.String()[len(out):])
	}
}

// TestRunLock: a run executing in one process cannot be resumed by another.
func TestRunLock(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	rep := start(t, repo, "version: 1\nagents:\n  sh: {kind: command, argv: [\"true\"]}\ntasks:\n  - {id: a, objective: x, agent: sh, write_scope: [a]}\n", Config{})
	st := rundir.NewLog(repo.Dir(), rep.RunID, time.Now, nil)
	if err := st.Lock(); err != nil {
		t.Fatal(err)
	}
	if !st.Active() {
		t.Error("a held lock is not seen")
	}
	if _, err := Resume(boundedCtx(t), Config{Repo: repo}, rep.RunID); !errors.Is(err, ErrRunning) {
		t.Errorf("resume of a locked run: %v", err)
	}
	st.Close()
	if st.Active() {
		t.Error("a released lock is still seen")
	}
}

// TestProgressEscrow: without a terminal, a task that waits on an escrow
// request gets a line naming the operation and the command that approves
// it; a request denied at once and a decision get lines of their own.
func TestProgressEscrow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var b bytes.Buffer
	p := &Progress{W: &b}
	for _, ev := range []Event{
		{Time: t0, Run: "r1", Kind: rundir.EvRunStarted, Tasks: 1, Branch: "main"},
		{Time: t0.Add(time.Second), Kind: rundir.EvEscrowRequested, Task: "pusher", Attempt: 1, Reason: "command: git push origin main", Path: "3fa9c01b22d4-1", Status: EscrowPending},
		{Time: t0.Add(2 * time.Second), Kind: rundir.EvEscrowDecided, Task: "pusher", Status: EscrowApproved, Path: "3fa9c01b22d4-1"},
		{Time: t0.Add(3 * time.Second), Kind: rundir.EvEscrowRequested, Task: "child", Attempt: 1, Reason: "tool: rw.move", Path: "3fa9c01b22d4-2", Status: EscrowDenied},
	} {
		p.Event(ev)
	}
	want := []string{
		"   0.0s run r1: 1 tasks on main",
		"   1.0s pusher: waits for a human to approve command: git push origin main (escrow request 3fa9c01b22d4-1): apiary escrow approve 3fa9c01b22d4-1",
		"   2.0s pusher: escrow request 3fa9c01b22d4-1 approved",
		"   3.0s child: tool: rw.move refused: escrow request 3fa9c01b22d4-2 was denied at once (outside the authority of the task tree)",
	}
	if got := strings.TrimSuffix(b.String(), "\n"); got != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestProgressStatusNotRepeated: a reason that starts with the task's
// status word is not preceded by it again.
func TestProgressStatusNotRepeated(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct{ status, reason, want string }{
		{"cancelled", "cancelled by the operator", "a: cancelled by the operator"},
		{"cancelled", "cancelled", "a: cancelled"},
		{"cancelled", "with p: deadline", "a: cancelled: with p: deadline"},
		{"cancelled", "Cancelled at b: parent failed", "a: Cancelled at b: parent failed"},
		{"failed", "rejected", "a: failed: rejected"},
		{"failed", "failedover: odd", "a: failed: failedover: odd"},
		{"skipped", "", "a: skipped"},
	} {
		var b bytes.Buffer
		p := &Progress{W: &b}
		p.Event(Event{Time: t0, Kind: rundir.EvTaskDone, Task: "a", Status: c.status, Reason: c.reason})
		if got := strings.TrimSpace(strings.TrimPrefix(b.String(), "   0.0s ")); got != c.want {
			t.Errorf("%s with reason %q: %q, want %q", c.status, c.reason, got, c.want)
		}
	}
}
