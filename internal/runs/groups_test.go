package runs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// groupAgent fails a task while its counter (outside the repository) is
// below its FAILS, counting each run of it. With BLOCK_b set, b's first
// attempt runs until it is killed (restarted or cancelled), and a fails
// only once b's agent is running: the restart then has a live agent to
// stop. (Blocking on b's own run count instead hangs when a's failure
// abandons b's first attempt before its agent ever starts: the restarted
// attempt is then b's first run, and nothing would ever kill it.)
const groupAgent = `
n=$(cat "$FLAGS/$APIARY_TASK" 2>/dev/null || echo 0)
n=$((n+1)); echo $n > "$FLAGS/$APIARY_TASK"
echo "$APIARY_TASK run $n" > "$APIARY_TASK.txt"
if [ -n "$BLOCK_b" ] && [ "$APIARY_TASK" = a ]; then
  while [ ! -s "$FLAGS/b" ]; do sleep 0.02; done
fi
if [ -n "$BLOCK_b" ] && [ "$APIARY_TASK" = b ] && [ "$APIARY_ATTEMPT" -lt 2 ]; then
  while :; do sleep 0.05; done
fi
fails=$(printenv "FAILS_$APIARY_TASK" || echo 0)
[ $n -gt $fails ]
`

func groupRun(t *testing.T, group, failsA, blockB string) (*Report, *git.Repo, string, *eventLog) {
	t.Helper()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	flags := t.TempDir()
	script := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(script, []byte(groupAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	src := `version: 1
max_parallel: 3
agents:
  sh: {kind: command, argv: ["sh", "` + script + `"], env: {FLAGS: "` + flags + `", FAILS_a: "` + failsA + `", BLOCK_b: "` + blockB + `"}}
groups:
  - ` + group + `
tasks:
  - {id: a, objective: a, agent: sh, write_scope: [a.txt]}
  - {id: b, objective: b, agent: sh, write_scope: [b.txt]}
  - {id: c, objective: c, agent: sh, write_scope: [c.txt], deps: [a]}
`
	var evs eventLog
	rep := start(t, repo, src, Config{OnEvent: evs.add})
	return rep, repo, flags, &evs
}

func runs(t *testing.T, flags, task string) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(flags, task))
	return strings.TrimSpace(string(b))
}

// TestGroupOneForOne: a failing member is restarted, alone, within the
// group's intensity, and the run succeeds.
func TestGroupOneForOne(t *testing.T) {
	t.Parallel()
	rep, _, flags, evs := groupRun(t, `{name: g, strategy: one_for_one, max_restarts: 2, within_s: 60, tasks: [a, b]}`, "2", "")
	if !rep.OK() {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	if runs(t, flags, "a") != "3" || evs.count(rundir.EvRestarted) != 2 {
		t.Errorf("a ran %s times, %d restarts", runs(t, flags, "a"), evs.count(rundir.EvRestarted))
	}
	if got := runs(t, flags, "b"); got != "1" {
		t.Errorf("b ran %s times: one_for_one restarted it", got)
	}
}

// TestGroupOneForAll: a's failure restarts b too (it was still running).
func TestGroupOneForAll(t *testing.T) {
	t.Parallel()
	rep, _, flags, evs := groupRun(t, `{name: g, strategy: one_for_all, max_restarts: 3, within_s: 60, tasks: [a, b]}`, "1", "1")
	if !rep.OK() {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	if runs(t, flags, "a") != "2" || runs(t, flags, "b") != "2" {
		t.Errorf("a ran %s times, b %s times; want 2 and 2", runs(t, flags, "a"), runs(t, flags, "b"))
	}
	if n := evs.count(rundir.EvRestarted); n != 2 {
		t.Errorf("%d restart events, want 2 (a and b)", n)
	}
}

// TestGroupEscalates: past its intensity the group escalates to its
// parent, the run's root: the failing member fails, everything else is
// cancelled with the escalation as the reason.
func TestGroupEscalates(t *testing.T) {
	t.Parallel()
	rep, repo, flags, evs := groupRun(t, `{name: g, strategy: one_for_one, max_restarts: 1, within_s: 60, tasks: [a, b]}`, "99", "1")
	if rep.Status != "cancelled" {
		t.Errorf("run status %s", rep.Status)
	}
	if runs(t, flags, "a") != "2" || evs.count(rundir.EvEscalated) != 1 {
		t.Errorf("a ran %s times, %d escalations", runs(t, flags, "a"), evs.count(rundir.EvEscalated))
	}
	for name, want := range map[string]envelope.Status{"a": envelope.StatusFailed, "b": envelope.StatusCancelled} {
		rc := receipt(t, repo, rep.RunID, name)
		if rc.Status != want || want == envelope.StatusCancelled && !strings.Contains(rc.Reason, "escalated") {
			t.Errorf("%s: %s %q", name, rc.Status, rc.Reason)
		}
	}
}

// TestGroupOneForAllIntegrating: a member whose candidate the integrator
// holds when another member fails is restarted too, and only its restart
// counts: the held candidate is refused for its stale fence even though
// its checks pass, and the branch carries the new attempt's commit.
func TestGroupOneForAllIntegrating(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	flags := t.TempDir()
	script := filepath.Join(t.TempDir(), "agent.sh")
	// a fails its first run once b's check runs in the integrator; b's
	// check passes only once b's restart has started its second run.
	agentSrc := `
n=$(cat "$FLAGS/$APIARY_TASK" 2>/dev/null || echo 0)
n=$((n+1)); echo $n > "$FLAGS/$APIARY_TASK"
echo "$APIARY_TASK run $n" > "$APIARY_TASK.txt"
if [ "$APIARY_TASK" = a ]; then
  while [ ! -e "$FLAGS/b.checking" ]; do sleep 0.02; done
  [ $n -gt 1 ]
fi
`
	if err := os.WriteFile(script, []byte(agentSrc), 0o755); err != nil {
		t.Fatal(err)
	}
	check := `touch ` + flags + `/b.checking; while [ "$(cat ` + flags + `/b)" -lt 2 ]; do sleep 0.02; done`
	src := `version: 1
max_parallel: 3
agents:
  sh: {kind: command, argv: ["sh", "` + script + `"], env: {FLAGS: "` + flags + `"}}
groups:
  - {name: g, strategy: one_for_all, max_restarts: 3, within_s: 60, tasks: [a, b]}
tasks:
  - {id: a, objective: a, agent: sh, write_scope: [a.txt]}
  - {id: b, objective: b, agent: sh, write_scope: [b.txt], checks: ['` + check + `']}
`
	var evs eventLog
	rep := start(t, repo, src, Config{OnEvent: evs.add})
	if !rep.OK() {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	if runs(t, flags, "a") != "2" || runs(t, flags, "b") != "2" {
		t.Errorf("a ran %s times, b %s times; want 2 and 2", runs(t, flags, "a"), runs(t, flags, "b"))
	}
	if got := gittest.Show(t, repo, rep.IntegrationBranch, "b.txt"); got != "b run 2\n" {
		t.Errorf("b.txt on the branch = %q, want the restarted attempt's", got)
	}
	rejected := 0
	evs.mu.Lock()
	for _, ev := range evs.evs {
		if ev.Kind == rundir.EvFenceRejected && ev.Task == "b" && ev.Attempt == 1 {
			rejected++
		}
		if ev.Kind == rundir.EvIntegrated && ev.Task == "b" && ev.Attempt != 2 {
			t.Errorf("b's attempt %d was integrated", ev.Attempt)
		}
	}
	evs.mu.Unlock()
	if rejected != 1 {
		t.Errorf("b's held candidate refused %d times, want 1", rejected)
	}
}
