//go:build unix

package runs

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// fenceAgent: attempt 1 records its pid, ignores SIGTERM (a worker busy
// finishing a write), writes its result and waits for the test's go-ahead;
// attempt 2 writes its result at once.
const fenceAgent = `
trap '' TERM
echo "attempt $APIARY_ATTEMPT" > result.txt
if [ "$APIARY_ATTEMPT" = 1 ]; then
  echo $$ > "$FLAGS/pid"
  while [ ! -e "$FLAGS/go" ]; do sleep 0.05 || true; done
fi
`

// TestFencingStaleWorker is the fencing show with real processes: attempt
// 1's agent is stopped with SIGSTOP until its lease lapses; the task runs
// again (attempt 2, a new fencing token) and integrates; attempt 1 is then
// continued, finishes, and its result is handed to the integrator, which
// refuses its stale fencing token. The integration branch shows only
// attempt 2.
func TestFencingStaleWorker(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	flags := t.TempDir()
	script := agentScript(t, fenceAgent)
	src := `version: 1
max_parallel: 2
agents:
  sh: {kind: command, argv: ["sh", "` + script + `"], env: {FLAGS: "` + flags + `"}}
tasks:
  - {id: f, objective: f, agent: sh, write_scope: [result.txt], lease_s: 1, checks: ["grep -q attempt result.txt"]}
`
	w := newWaiter()
	id := "fencing"
	wait := startBG(t, repo, id, src, Config{OnEvent: w.add, HeartbeatInterval: 100 * time.Millisecond, AgentGrace: time.Minute})
	pidFile := filepath.Join(flags, "pid")
	var pid int
	bound := boundedCtx(t)
	for ; pid == 0; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if bound.Err() != nil {
			t.Fatalf("attempt 1 never started: %v", context.Cause(bound))
		}
	}
	// Stop the whole process group: the worker is paused, not dead.
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Should the test stop early, a stopped group would sit out its whole
	// SIGKILL grace: continue it so that its pending SIGTERM acts.
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGCONT) })
	w.waitFor(t, "attempt 1's lease to lapse", func(evs []Event) bool {
		return slices.ContainsFunc(evs, func(ev Event) bool { return ev.Kind == rundir.EvLeaseLapsed && ev.Attempt == 1 })
	})
	w.waitFor(t, "attempt 2 to integrate", func(evs []Event) bool {
		return slices.ContainsFunc(evs, func(ev Event) bool { return ev.Kind == rundir.EvIntegrated && ev.Attempt == 2 })
	})
	// Wake the stale worker: SIGTERM (pending) is ignored, it finishes.
	if err := os.WriteFile(filepath.Join(flags, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	rep := wait()
	evs := w.all()
	var rejected *Event
	for i, ev := range evs {
		if ev.Kind == rundir.EvFenceRejected && ev.Attempt == 1 {
			rejected = &evs[i]
		}
	}
	if rejected == nil || rejected.Commit == "" || !strings.Contains(rejected.Reason, "stale fencing token") {
		t.Fatalf("attempt 1's late result was not refused for its fence: %+v; events %s", rejected, w.kinds())
	}
	if !rep.OK() {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	rc := receipt(t, repo, id, "f")
	var fence2 uint64
	for _, ev := range evs {
		if ev.Kind == rundir.EvAttemptStarted && ev.Attempt == 2 {
			fence2 = ev.Fence
		}
	}
	if rc.Status != envelope.StatusSucceeded || rc.FencingToken != fence2 || rc.FencingToken <= rejected.Fence {
		t.Errorf("receipt %s fence %d, attempt 2 fence %d, stale fence %d", rc.Status, rc.FencingToken, fence2, rejected.Fence)
	}
	// Only attempt 2 is on the branch, and its content is attempt 2's.
	log, err := repo.FirstParentLog(t.Context(), rep.StartHead, "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	var attempts []string
	for _, e := range log {
		if n, ok := git.TrailerValue(e.Trailers, attempt.TrailerAttempt); ok {
			attempts = append(attempts, n)
		}
	}
	if !slices.Equal(attempts, []string{"2"}) {
		t.Errorf("attempts on the branch: %v", attempts)
	}
	if got := gittest.Show(t, repo, "main", "result.txt"); got != "attempt 2\n" {
		t.Errorf("result.txt = %q", got)
	}
	if ps := procsOf(id, ""); len(ps) != 0 {
		t.Errorf("processes left: %v", ps)
	}
}
