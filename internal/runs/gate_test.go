package runs

import (
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git/gittest"
)

const gateFixtureTest = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if 1+1 != 2 {
		t.Fatal("bad")
	}
}

func TestSub(t *testing.T) {
	if 2-1 != 1 {
		t.Fatal("bad")
	}
}
`

// TestGatesReject: a task writing outside its scope, one touching a sealed
// path, one deleting a test and one whose check fails are each rejected
// with the typed reason in the receipt, and nothing reaches the branch.
func TestGatesReject(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"calc/calc_test.go": gateFixtureTest, "golden/out.txt": "gold\n", "src/x.txt": "x\n"})
	start0 := gittest.Git(t, repo.Dir(), "rev-parse", "main")
	src := `version: 1
max_parallel: 4
sealed: [golden/]
agents:
  scope: {kind: command, argv: ["sh", "-c", "echo y > src/y.txt && echo oops > other.txt"]}
  sealed: {kind: command, argv: ["sh", "-c", "echo tampered > golden/out.txt"]}
  deltest: {kind: command, argv: ["sh", "-c", "sed -i '/^func TestSub/,/^}/d' calc/calc_test.go"]}
  check: {kind: command, argv: ["sh", "-c", "echo broken > src/x.txt"]}
tasks:
  - {id: out-of-scope, objective: x, agent: scope, write_scope: [src/]}
  - {id: touch-sealed, objective: x, agent: sealed, write_scope: ["."]}
  - {id: delete-test, objective: x, agent: deltest, write_scope: [calc/]}
  - {id: failing-check, objective: x, agent: check, write_scope: [src/], checks: ["grep -q '^x$' src/x.txt"]}
`
	rep := start(t, repo, src, Config{})
	if rep.OK() || rep.Totals.Failed != 4 || rep.Totals.GateRejections != 4 {
		t.Fatalf("report %+v", rep.Totals)
	}
	want := map[string]envelope.GateReason{
		"out-of-scope":  {Gate: gate.GateScope, File: "other.txt"},
		"touch-sealed":  {Gate: gate.GateSealed, File: "golden/out.txt"},
		"delete-test":   {Gate: gate.GateForbidden, Pattern: envelope.PatternDeletedTests, File: "calc/calc_test.go"},
		"failing-check": {Gate: gate.GateCheck},
	}
	for name, w := range want {
		rc := receipt(t, repo, rep.RunID, name)
		g := rc.Gate
		if rc.Status != envelope.StatusFailed || g == nil || g.Gate != w.Gate || g.Pattern != w.Pattern || w.File != "" && g.File != w.File {
			t.Errorf("%s: status %s gate %+v, want %+v", name, rc.Status, g, w)
		}
		if rc.Integrated != nil {
			t.Errorf("%s was integrated", name)
		}
	}
	if rc := receipt(t, repo, rep.RunID, "failing-check"); len(rc.Checks) != 1 || rc.Checks[0].Exit == 0 {
		t.Errorf("failing check result %+v", rc.Checks)
	}
	if head := gittest.Git(t, repo.Dir(), "rev-parse", "main"); head != start0 {
		t.Errorf("the branch moved to %s", head)
	}
}
