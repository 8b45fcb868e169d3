package runs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// childAgent writes files per task and hands back child envelopes: p adds
// c1 (inside its scope) and c2 (outside: refused); c1 adds a grandchild,
// refused at depth limit 1.
const childAgent = `set -e
env() { printf '{"task_id":"%s","name":"%s","objective":"%s","inputs":{"workspace":"git:%s"},"authority":{"write_scope":["%s"]},"budget":{"usd":%s},"completion":{"checks":["test -f %s"]},"deps":[],"agent":{"profile":"sh"}}' "$1" "$2" "$3" "$APIARY_BASE" "$4" "$5" "$6"; }
mkdir -p .apiary/out/tasks
case "$APIARY_TASK" in
p)
  mkdir -p p && echo p > p/p.txt
  env 0190a1b2-c3d4-7e5f-8a6b-0c1d2e3f4a5b c1 "child one" p/c1/ 0 p/c1/x.txt > .apiary/out/tasks/c1.json
  env 0190a1b2-c3d4-7e5f-8a6b-0c1d2e3f4a5c c2 "child two" q/ 0 q/y > .apiary/out/tasks/c2.json
  ;;
c1)
  mkdir -p p/c1 && echo c1 > p/c1/x.txt
  env 0190a1b2-c3d4-7e5f-8a6b-0c1d2e3f4a5d g1 "grandchild" p/c1/g/ 0 p/c1/g > .apiary/out/tasks/g1.json
  ;;
esac
`

// TestChildTasks: envelopes an agent leaves in .apiary/out/tasks become
// tasks scheduled after it, within its authority; the rest are refused
// with a reason in its receipt.
func TestChildTasks(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	script := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(script, []byte(childAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	src := `version: 1
agents:
  sh: {kind: command, argv: ["sh", "` + script + `"]}
tasks:
  - {id: p, objective: parent, agent: sh, write_scope: [p/], budget: {usd: 1}}
`
	rep := start(t, repo, src, Config{MaxDepth: 1})
	if !rep.OK() {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	if got := integrationsOf(t, repo, rep); !slices.Equal(got, []string{"p:fast-forward", "c1:fast-forward"}) {
		t.Errorf("integrations %v", got)
	}
	if s := gittest.Show(t, repo, "main", "p/c1/x.txt"); s != "c1\n" {
		t.Errorf("p/c1/x.txt = %q", s)
	}
	// apiary's own files in the worktree are never committed.
	if _, err := repo.ReadBlob(t.Context(), "main", ".apiary/out/tasks/c1.json"); err == nil {
		t.Error(".apiary was committed")
	}
	p := receipt(t, repo, rep.RunID, "p")
	if !slices.Contains(p.Artifacts, "children/c1.json") || !strings.Contains(p.Summary, "c2.json refused") || !strings.Contains(p.Summary, "write scope") {
		t.Errorf("parent receipt %+v", p)
	}
	c1 := receipt(t, repo, rep.RunID, "c1")
	if !strings.Contains(c1.Summary, "depth") {
		t.Errorf("grandchild not refused for depth: %q", c1.Summary)
	}
	b, err := os.ReadFile(filepath.Join(rundir.Path(repo.Dir(), rep.RunID), "tasks", "p", "children", "c1.json"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := envelope.DecodeEnvelope(b)
	// The child's budget was carved from the parent's (half: two children
	// asked); its id is apiary's, not the agent's.
	if err != nil || e.ParentID != p.TaskID || e.Depth != 1 || e.Budget.USD != 0.5 || e.TaskID == "0190a1b2-c3d4-7e5f-8a6b-0c1d2e3f4a5b" || !slices.Contains(e.Completion.Forbidden, envelope.PatternDeletedTests) {
		t.Errorf("child envelope %+v, %v", e, err)
	}
	if tr := rep.Task("c1"); tr == nil || tr.Parent != "p" || rep.Task("c2") != nil {
		t.Errorf("report tasks %+v", rep.Tasks)
	}
}

// TestChildBudget: a child gets, in each unit its parent limits, at most
// alpha of what the parent has left and no more than it asks; units the
// parent does not limit stay as asked; wall clock at most the parent's.
func TestChildBudget(t *testing.T) {
	t.Parallel()
	parentTmpl := envelope.Budget{USD: 1, InputTokens: 1000, WallClockS: 60}
	tests := []struct {
		name  string
		spent supervise.Units // the parent's spend before the carve
		want  envelope.Budget
		got   envelope.Budget
		err   bool
	}{
		{"alpha of the rest", supervise.Units{MicroUSD: 500_000}, envelope.Budget{}, envelope.Budget{USD: 0.25, InputTokens: 500, WallClockS: 60}, false},
		{"asks within", supervise.Units{}, envelope.Budget{USD: 0.4, InputTokens: 10, WallClockS: 5}, envelope.Budget{USD: 0.4, InputTokens: 10, WallClockS: 5}, false},
		{"asks too much: clamped to alpha", supervise.Units{MicroUSD: 700_000}, envelope.Budget{USD: 0.4}, envelope.Budget{USD: 0.15, InputTokens: 500, WallClockS: 60}, false},
		{"unlimited field stays", supervise.Units{}, envelope.Budget{ToolCalls: 7, WallClockS: 600}, envelope.Budget{ToolCalls: 7, USD: 0.5, InputTokens: 500, WallClockS: 60}, false},
		{"nothing left", supervise.Units{MicroUSD: 1_000_000}, envelope.Budget{}, envelope.Budget{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parent := supervise.NewBudget(unitsOf(parentTmpl))
			parent.Charge(tc.spent)
			kid, got, err := childBudget(parent, parentTmpl, 0.5, tc.want)
			if (err != nil) != tc.err || !tc.err && got != tc.got {
				t.Fatalf("childBudget = %+v, %v; want %+v (error %v)", got, err, tc.got, tc.err)
			}
			if tc.err {
				if !errors.Is(err, ErrChildBudget) {
					t.Errorf("error %v is not ErrChildBudget", err)
				}
				return
			}
			if rem := parent.Remaining(); rem.MicroUSD != 1_000_000-tc.spent.MicroUSD-unitsOf(got).MicroUSD {
				t.Errorf("parent left %+v after carving %+v", rem, got)
			}
			kid.Close()
		})
	}
}

func TestOutsideScope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		child, parent []string
		want          string
	}{
		{[]string{"src/a/"}, []string{"src/"}, ""},
		{[]string{"src/a/x.go"}, []string{"src/a/"}, ""},
		{[]string{"src/"}, []string{"src/a/"}, "src/"},
		{[]string{"."}, []string{"src/"}, "."},
		{[]string{"anything"}, []string{"."}, ""},
		{[]string{"srcx/"}, []string{"src"}, "srcx/"},
	}
	for _, tc := range tests {
		if got := outsideScope(tc.child, tc.parent); got != tc.want {
			t.Errorf("outsideScope(%v, %v) = %q, want %q", tc.child, tc.parent, got, tc.want)
		}
	}
}
