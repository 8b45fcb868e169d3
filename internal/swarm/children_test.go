package swarm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
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
	repo := newRepo(t, map[string]string{"README": "x\n"})
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
	if s := show(t, repo, "main", "p/c1/x.txt"); s != "c1\n" {
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
	b, err := os.ReadFile(filepath.Join(RunDir(repo.Dir(), rep.RunID), "tasks", "p", "children", "c1.json"))
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

func TestCarve(t *testing.T) {
	t.Parallel()
	parent := envelope.Budget{USD: 1, InputTokens: 1000}
	tests := []struct {
		name       string
		used, want envelope.Budget
		left       int
		got        envelope.Budget
		err        bool
	}{
		{"share of the rest", envelope.Budget{USD: 0.5}, envelope.Budget{}, 2, envelope.Budget{USD: 0.25, InputTokens: 500}, false},
		{"asks within", envelope.Budget{}, envelope.Budget{USD: 0.4, InputTokens: 10}, 1, envelope.Budget{USD: 0.4, InputTokens: 10}, false},
		{"asks too much", envelope.Budget{USD: 0.7}, envelope.Budget{USD: 0.4}, 1, envelope.Budget{}, true},
		{"unlimited field stays", envelope.Budget{}, envelope.Budget{ToolCalls: 7}, 1, envelope.Budget{ToolCalls: 7, USD: 1, InputTokens: 1000}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := carve(parent, tc.used, tc.want, tc.left)
			if (err != nil) != tc.err || !tc.err && got != tc.got {
				t.Errorf("carve = %+v, %v; want %+v (error %v)", got, err, tc.got, tc.err)
			}
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
