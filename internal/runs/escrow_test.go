package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// escrowAgent asks the run about an operation nobody escrowed, then about
// an escrowed push (refused, filed), waits for the test to approve it,
// asks again (allowed, once) and once more (a new request: the approval
// was used up).
const escrowAgent = `
mkdir -p out
escrow command "ls -la" out/free.json
escrow command "git push origin main" out/first.json
while [ ! -e "$GO" ]; do sleep 0.02; done
escrow command "git push origin main" out/second.json
escrow command "git push origin main" out/third.json
`

// TestEscrow: an escrowed command is refused to a task with the typed
// escrow_elevation_required and a pending request in the file queue whose
// chain goes up to the root; a human's approval (through the queue, as
// `apiary escrow approve` does) allows it exactly once, and the decision
// and its use are recorded.
func TestEscrow(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	script := agentScript(t, escrowAgent)
	goFile := filepath.Join(t.TempDir(), "go")
	src := `version: 1
agents:
  sh: {kind: command, argv: ["sh", "` + script + `"], env: {GO: "` + goFile + `"}}
tasks:
  - {id: pusher, objective: push, agent: sh, write_scope: [out/]}
`
	w := newWaiter()
	id := "escrow-run"
	wait := startBG(t, repo, id, src, Config{OnEvent: w.add, Escrow: EscrowPolicy{Commands: []string{"git push"}}})
	w.waitFor(t, "an escrow request", func(evs []Event) bool { return countKind(evs, rundir.EvEscrowRequested, "pusher") == 1 })
	q := NewEscrowQueue(repo.Dir(), nil)
	reqs, err := q.List()
	if err != nil || len(reqs) != 1 {
		t.Fatalf("queue: %+v, %v", reqs, err)
	}
	first := reqs[0]
	if first.State != EscrowPending || first.Task != "pusher" || first.Operation != "git push origin main" ||
		!slices.Equal(first.Chain, []string{"pusher", "root"}) {
		t.Errorf("request %+v", first)
	}
	// What the run shows without a terminal: who waits, and how to let it.
	var prog bytes.Buffer
	p := &Progress{W: &prog}
	for _, ev := range w.all() {
		p.Event(ev)
	}
	if want := "pusher: waits for a human to approve command: git push origin main (escrow request " + first.ID + "): apiary escrow approve " + first.ID + "\n"; !strings.Contains(prog.String(), want) {
		t.Errorf("progress does not announce the request:\n%s", prog.String())
	}
	if _, err := q.Approve(first.ID, "tester", "ok once"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Deny(first.ID, "tester", ""); !errors.Is(err, ErrDecided) {
		t.Errorf("deciding twice: %v", err)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := wait()
	if !rep.OK() {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	answer := func(name string) (string, map[string]any) {
		t.Helper()
		var m map[string]any
		body := gittest.Show(t, repo, rep.IntegrationBranch, "out/"+name+".json")
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("%s: %q: %v", name, body, err)
		}
		return strings.TrimSpace(gittest.Show(t, repo, rep.IntegrationBranch, "out/"+name+".json.code")), m
	}
	if code, m := answer("free"); code != "200" || m["allowed"] != true {
		t.Errorf("unescrowed command: %s %v", code, m)
	}
	for _, name := range []string{"first", "third"} {
		if code, m := answer(name); code != "403" || m["error"] != KindEscrow {
			t.Errorf("%s push: %s %v", name, code, m)
		}
	}
	if code, m := answer("second"); code != "200" || m["allowed"] != true || m["request"] != first.ID {
		t.Errorf("approved push: %s %v", code, m)
	}
	reqs, _ = q.List()
	states := map[string]string{}
	for _, r := range reqs {
		states[r.ID] = r.State
	}
	if len(reqs) != 2 || states[first.ID] != EscrowUsed {
		t.Errorf("queue after the run: %+v", reqs)
	}
}
