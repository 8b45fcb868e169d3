package runs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// TestRunIntegrates: independent tasks from one base integrate by
// fast-forward and then by three-way merge; a dependent starts from the
// head that holds its dependencies; receipts, trailers and the final tree
// say so.
func TestRunIntegrates(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "hello\n"})
	src := `version: 1
max_parallel: 2
agents:
  sh: {kind: command, argv: ["sh", "-c", "mkdir -p \"$APIARY_TASK\" && echo \"$APIARY_TASK from $APIARY_BASE\" > \"$APIARY_TASK/out.txt\""]}
tasks:
  - {id: a, objective: make a, agent: sh, write_scope: [a/], checks: ["test -f a/out.txt"]}
  - {id: b, objective: make b, agent: sh, write_scope: [b/], checks: ["test -f b/out.txt"]}
  - {id: c, objective: make c, agent: sh, write_scope: [c/], deps: [a, b], checks: ["test -f a/out.txt && test -f b/out.txt"]}
`
	var evs eventLog
	rep := start(t, repo, src, Config{OnEvent: evs.add})
	if !rep.OK() {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	got := integrationsOf(t, repo, rep)
	// a and b start from the same base: the first integrated fast-forwards,
	// the second merges; c then starts on the head holding both.
	if len(got) != 3 || !strings.HasSuffix(got[0], ":fast-forward") || !strings.HasSuffix(got[1], ":merge") || got[2] != "c:fast-forward" {
		t.Errorf("integrations %v", got)
	}
	head := gittest.Git(t, repo.Dir(), "rev-parse", "main")
	for _, name := range []string{"a", "b", "c"} {
		rc := receipt(t, repo, rep.RunID, name)
		if rc.Status != envelope.StatusSucceeded || rc.Integrated == nil || rc.Gate != nil || len(rc.Checks) != 1 || rc.Checks[0].Exit != 0 {
			t.Errorf("%s receipt %+v", name, rc)
		}
		if !strings.HasPrefix(gittest.Show(t, repo, head, name+"/out.txt"), name+" from ") {
			t.Errorf("%s/out.txt missing", name)
		}
	}
	cBase := receipt(t, repo, rep.RunID, "c").Base
	if ok, _ := repo.IsAncestor(t.Context(), receipt(t, repo, rep.RunID, "b").Commit, cBase); !ok {
		t.Errorf("c's base %s does not hold b's work", cBase)
	}
	// Nothing left behind: worktrees removed, task branches deleted.
	if wts, _ := repo.Worktrees(t.Context()); len(wts) != 1 {
		t.Errorf("worktrees left: %+v", wts)
	}
	if br := gittest.Git(t, repo.Dir(), "branch", "--list", "apiary/*"); br != "" {
		t.Errorf("branches left: %s", br)
	}
	// The main checkout was brought along with the branch it has out.
	if dirty, _ := repo.DirtyPaths(t.Context()); len(dirty) != 0 {
		t.Errorf("checkout left dirty: %v", dirty)
	}
	if _, err := os.Stat(filepath.Join(repo.Dir(), "c", "out.txt")); err != nil {
		t.Errorf("checkout not synced: %v", err)
	}
	if n := evs.count(rundir.EvIntegrated); n != 3 {
		t.Errorf("%d integrated events", n)
	}
	// The report read back from disk agrees.
	again, err := LoadReport(repo.Dir(), rep.RunID)
	if err != nil || again.Totals.Integrated[attempt.FastForward] != 2 || again.Totals.Integrated[attempt.Merge] != 1 || !slices.Equal(again.Achieved.Tasks[len(again.Achieved.Tasks)-1:], []string{"c"}) {
		t.Errorf("report %+v, %v", again, err)
	}
}
