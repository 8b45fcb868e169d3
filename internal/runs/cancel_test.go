package runs

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// cancelAgent: task a spawns a child a-kid (which runs at once, alongside
// it); every agent leaves a background process behind (a grandchild in
// its process group) and waits.
const cancelAgent = `
mkdir -p out
case "$APIARY_TASK" in
a) spawn a-kid a/kid/ false out/spawn.json ;;
esac
sleep 1000 &
wait
`

// TestCancelSubtree cancels one task of a live run through its control
// socket, as `apiary cancel RUN TASK` from another process would: the task
// and the child it spawned end — every process of theirs gone, receipts
// "cancelled" with the reason, worktrees removed, capabilities revoked —
// while the other task keeps running; cancelling the run then ends it.
func TestCancelSubtree(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	script := agentScript(t, cancelAgent)
	src := `version: 1
max_parallel: 2
agents:
  sh: {kind: command, argv: ["sh", "` + script + `"]}
tasks:
  - {id: a, objective: a, agent: sh, write_scope: [a/]}
  - {id: b, objective: b, agent: sh, write_scope: [b/]}
`
	w := newWaiter()
	id := "cancel-subtree"
	wait := startBG(t, repo, id, src, Config{OnEvent: w.add, AgentGrace: 30 * time.Second})
	w.waitFor(t, "three agents", func(evs []Event) bool { return countKind(evs, rundir.EvAgentStarted, "") == 3 })
	for _, task := range []string{"a", "a-kid", "b"} {
		waitProcs(t, id, task, 2) // the agent and its background child
	}
	ctl := DialControl(ControlPath(repo.Dir(), id))
	// An agent's capability is not an operator's.
	agentTok := readCapability(t, repo, id, "b")
	if _, err := ctl.Cancel(boundedCtx(t), CancelRequest{Operator: agentTok, Task: "a"}); !errors.Is(err, ErrPermission) {
		t.Fatalf("cancel with an agent's token: %v", err)
	}
	res, err := ctl.Cancel(boundedCtx(t), CancelRequest{Operator: operator(t, repo, id), Task: "a", Reason: "operator says stop"})
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(res.Cancelled)); !slices.Equal(got, []string{"a", "a-kid"}) {
		t.Errorf("cancelled %v", res.Cancelled)
	}
	t.Logf("cancel acknowledged in %.1f ms", res.AckMs)
	for _, task := range []string{"a", "a-kid"} {
		if ps := procsOf(id, task); len(ps) != 0 {
			t.Errorf("%s: processes left after the acknowledgement: %v", task, ps)
		}
		rc := receipt(t, repo, id, task)
		if rc.Status != envelope.StatusCancelled || !strings.Contains(rc.Reason, "operator says stop") {
			t.Errorf("%s receipt: %s %q", task, rc.Status, rc.Reason)
		}
	}
	if len(procsOf(id, "b")) == 0 {
		t.Error("b was killed too")
	}
	// a's capability is revoked in the file the out-of-process verifiers read.
	fr := capability.NewFileRevoker(RevocationsPath(repo.Dir(), id), 0, nil)
	key, _ := LoadKey(repo.Dir(), false, nil)
	for task, revoked := range map[string]bool{"a": true, "a-kid": true, "b": false} {
		tok, err := capability.Decode(readCapability(t, repo, id, task))
		if err != nil {
			t.Fatal(err)
		}
		err = capability.Verify(key, tok, capability.Request{Now: time.Now()}, fr)
		if errors.Is(err, capability.ErrRevoked) != revoked {
			t.Errorf("%s's capability after the cancel: %v", task, err)
		}
	}
	// Now the whole run.
	if _, err := ctl.Cancel(boundedCtx(t), CancelRequest{Operator: operator(t, repo, id)}); err != nil {
		t.Fatal(err)
	}
	rep := wait()
	if rep.Status != "cancelled" {
		t.Errorf("run status %s", rep.Status)
	}
	if ps := procsOf(id, ""); len(ps) != 0 {
		t.Errorf("processes left: %v", ps)
	}
	if wts, _ := repo.Worktrees(t.Context()); len(wts) != 1 {
		t.Errorf("worktrees left: %+v", wts)
	}
	if rc := receipt(t, repo, id, "b"); rc.Status != envelope.StatusCancelled {
		t.Errorf("b: %s", rc.Status)
	}
	if _, err := os.Stat(ControlPath(repo.Dir(), id)); err == nil {
		t.Error("the control socket outlived the run")
	}
	if _, err := ctl.Cancel(boundedCtx(t), CancelRequest{Operator: operator(t, repo, id)}); !errors.Is(err, ErrNotLive) {
		t.Errorf("cancel of an ended run: %v", err)
	}
}

// readCapability returns the capability in a task's latest envelope.
func readCapability(t testing.TB, repo interface{ Dir() string }, run, task string) string {
	t.Helper()
	b, err := os.ReadFile(rundir.Path(repo.Dir(), run) + "/tasks/" + task + "/envelope.json")
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Authority struct {
			Capability string `json:"capability"`
		} `json:"authority"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Authority.Capability == "" {
		t.Fatalf("%s's envelope has no capability: %v", task, err)
	}
	return e.Authority.Capability
}
