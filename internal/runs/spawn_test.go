package runs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// spawnAgent: p spawns c and waits for its receipt; c spawns g (depth 2)
// and waits; g tries to spawn deeper and is refused; c also asks for a
// child outside its write scope. Every answer is written to a file the
// task commits.
const spawnAgent = `
case "$APIARY_TASK" in
p) d=out/p ;;
c) d=p/c ;;
g) d=p/c/g ;;
esac
mkdir -p "$d"
case "$APIARY_TASK" in
p) spawn c p/c/ true "$d/spawn-c.json" ;;
c) spawn g p/c/g/ true "$d/spawn-g.json"
   spawn wide q/ false "$d/spawn-wide.json" ;;
g) spawn deeper p/c/g/d/ false "$d/spawn-deeper.json" ;;
esac
echo "$APIARY_TASK done" > "$d/done.txt"
`

// TestSpawnTree: children asked for over the control socket run while
// their parent waits; depth beyond max_depth gets a typed permission error,
// so does authority wider than the parent's; each child's budget is carved
// from its parent's (at most half of what is left); the child's receipt
// comes back to the parent; the parent is done after its children.
func TestSpawnTree(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	script := agentScript(t, spawnAgent)
	src := `version: 1
max_parallel: 1
agents:
  sh: {kind: command, argv: ["sh", "` + script + `"]}
tasks:
  - {id: p, objective: parent, agent: sh, write_scope: [out/, p/], budget: {usd: 1, input_tokens: 1000}}
`
	var evs eventLog
	rep := start(t, repo, src, Config{MaxDepth: 2, OnEvent: evs.add})
	if !rep.OK() {
		for _, n := range []string{"c", "g"} {
			b, _ := os.ReadFile(filepath.Join(rundir.Path(repo.Dir(), rep.RunID), "tasks", n, "receipt.json"))
			t.Logf("%s: %s", n, b)
		}
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	read := func(path string) (code string, body map[string]any) {
		t.Helper()
		b := gittest.Show(t, repo, "main", path)
		c := gittest.Show(t, repo, "main", path+".code")
		if err := json.Unmarshal([]byte(b), &body); err != nil {
			t.Fatalf("%s: %v: %s", path, err, b)
		}
		return c, body
	}
	code, pc := read("out/p/spawn-c.json")
	if code != "200" || pc["task"] != "c" || pc["depth"].(float64) != 1 {
		t.Errorf("p's spawn of c: %s %v", code, pc)
	}
	var rc envelope.Receipt
	if b, _ := json.Marshal(pc["receipt"]); json.Unmarshal(b, &rc) != nil || rc.Status != envelope.StatusSucceeded || rc.Name != "c" {
		t.Errorf("c's receipt was not returned to p: %v", pc["receipt"])
	}
	if code, cg := read("p/c/spawn-g.json"); code != "200" || cg["depth"].(float64) != 2 {
		t.Errorf("c's spawn of g: %s %v", code, cg)
	}
	code, deeper := read("p/c/g/spawn-deeper.json")
	ctx, _ := deeper["context"].(map[string]any)
	if code != "403" || deeper["error"] != KindPermission || ctx["reason"] != "depth_exceeded" {
		t.Errorf("depth 3: %s %v", code, deeper)
	}
	code, wide := read("p/c/spawn-wide.json")
	if code != "403" || wide["error"] != KindPermission || !strings.Contains(wide["message"].(string), "write scope") {
		t.Errorf("wider scope: %s %v", code, wide)
	}
	// Budgets: c ≤ half of p's, g ≤ half of c's.
	env := func(parent, name string) *envelope.Envelope {
		b, err := os.ReadFile(filepath.Join(rundir.Path(repo.Dir(), rep.RunID), "tasks", parent, "children", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		e, err := envelope.DecodeEnvelope(b)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	ce, ge := env("p", "c"), env("c", "g")
	if ce.Budget.USD != 0.5 || ce.Budget.InputTokens != 500 || ge.Budget.USD != 0.25 || ge.Budget.InputTokens != 250 {
		t.Errorf("budgets: c %+v, g %+v", ce.Budget, ge.Budget)
	}
	if ce.Depth != 1 || ge.Depth != 2 || ce.ParentID != receipt(t, repo, rep.RunID, "p").TaskID {
		t.Errorf("child envelopes: c depth %d parent %s, g depth %d", ce.Depth, ce.ParentID, ge.Depth)
	}
	// Everyone integrated; p last, after its children.
	got := integrationsOf(t, repo, rep)
	order := []string{}
	for _, x := range got {
		order = append(order, strings.Split(x, ":")[0])
	}
	if !slices.Equal(order, []string{"g", "c", "p"}) {
		t.Errorf("integration order %v", got)
	}
	if n := evs.count(rundir.EvChildAdded); n != 2 {
		t.Errorf("%d children spawned", n)
	}
	if n := evs.count(rundir.EvChildRefused); n != 2 {
		t.Errorf("%d children refused", n)
	}
}
