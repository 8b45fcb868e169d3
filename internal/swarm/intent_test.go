package swarm

import (
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// TestIntentsAtFileGranularity: tasks whose write scopes list files
// declare file intents, so two tasks writing different files of one
// directory do not overlap (and do not wait for each other); a directory
// scope still overlaps every file in it, and one file with itself.
func TestIntentsAtFileGranularity(t *testing.T) {
	t.Parallel()
	intent := func(task string, scope ...string) board.Intent {
		files, level, _ := intentOf(scope)
		return board.Intent{Task: task, Worker: "w", Files: files, Scope: level}
	}
	x, y := intent("x", "pkg/x.go"), intent("y", "pkg/y.go", "pkg/y_test.go")
	if x.Scope != board.ScopeFile || y.Scope != board.ScopeFile {
		t.Fatalf("scopes %s %s; want file intents for file lists", x.Scope, y.Scope)
	}
	for _, c := range []struct {
		a, b board.Intent
		want bool
	}{
		{x, y, false},
		{x, intent("x2", "pkg/x.go"), true},
		{intent("d", "pkg/"), x, true},
		{intent("all", "."), y, true},
		{intent("other", "cmd/"), x, false},
	} {
		if got := c.a.Overlap(c.b) != nil; got != c.want {
			t.Errorf("%s %v vs %s %v: overlap %v, want %v", c.a.Task, c.a.Files, c.b.Task, c.b.Files, got, c.want)
		}
	}
}

// TestIntentWaitFromPlan: the plan's intent_wait_s is the run's unless the
// caller (apiary run --intent-wait) sets one.
func TestIntentWaitFromPlan(t *testing.T) {
	t.Parallel()
	f := newSwarmFixture(t)
	plan := strings.Replace(f.plan, "version: 1\n", "version: 1\nintent_wait_s: 7\n", 1)
	for _, c := range []struct {
		set, want float64
	}{{0, 7}, {3, 3}} {
		r, err := Publish(t.Context(), PublishConfig{Store: f.st, Repo: f.repo, PlanFile: "plan.yaml", PlanData: []byte(plan), Options: layout.Options{IntentWaitS: c.set}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Options.IntentWaitS != c.want {
			t.Errorf("set %g: the run's intent wait is %g, want %g", c.set, r.Options.IntentWaitS, c.want)
		}
	}
}
