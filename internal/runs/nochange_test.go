package runs

import (
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// TestNoChangeSaysSo: a task whose agent changed nothing succeeds with
// nothing integrated, and its receipt, its report row and the progress
// line say so.
func TestNoChangeSaysSo(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	var prog strings.Builder
	p := &Progress{W: &prog}
	rep := start(t, repo, `version: 1
agents:
  idle: {kind: command, argv: ["true"]}
tasks:
  - {id: a, objective: do nothing, agent: idle, write_scope: [a.txt]}
`, Config{OnEvent: p.Event})
	p.Close()
	rc := receipt(t, repo, rep.RunID, "a")
	if rc.Status != envelope.StatusSucceeded || rc.Integrated != nil || !strings.Contains(rc.Reason, "changed nothing") {
		t.Errorf("receipt: %s, integrated %v, reason %q", rc.Status, rc.Integrated, rc.Reason)
	}
	if tr := rep.Task("a"); !tr.NoChange {
		t.Errorf("report row %+v", tr)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "no change") {
		t.Errorf("the report does not say so: %v\n%s", err, text.String())
	}
	if !strings.Contains(prog.String(), "changed nothing") {
		t.Errorf("progress:\n%s", prog.String())
	}
}
