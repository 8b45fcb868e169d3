package plan

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
)

// worked is the textbook's worked example of a plan.
const worked = `version: 1
max_parallel: 4
agents:
  sh: {kind: command, argv: ["sh", "-c", "./do-task.sh"], env: {K: V}}
tasks:
  - {id: v1, objective: one, agent: sh, write_scope: [a/], estimate_s: 20.5}
  - {id: v2, objective: two, agent: sh, write_scope: [b/], estimate_s: 42, deps: [v1]}
  - {id: v3, objective: three, agent: sh, write_scope: [c/], estimate_s: 42, deps: [v1]}
  - {id: v4, objective: four, agent: sh, write_scope: [d/], estimate_s: 42, deps: [{task: v1}]}
  - {id: v5, objective: five, agent: sh, write_scope: [e/], estimate_s: 43, deps: [v2, v3]}
  - {id: v6, objective: six, agent: sh, write_scope: [f/], estimate_s: 16.5, deps: [{task: v4, kind: control}]}
  - {id: v7, objective: seven, agent: sh, write_scope: [g/], estimate_s: 69, deps: [v5, v6]}
`

func mustParse(t testing.TB, src string) *Plan {
	t.Helper()
	p, err := Parse("plan.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestWorkedExample(t *testing.T) {
	t.Parallel()
	p := mustParse(t, worked)
	a := p.Analyze(4)
	if a.WorkS != 275 {
		t.Errorf("work = %v, want 275", a.WorkS)
	}
	if want := []string{"v1", "v2", "v5", "v7"}; !slices.Equal(a.CriticalPath, want) {
		t.Errorf("critical path = %v, want %v", a.CriticalPath, want)
	}
	if a.CriticalPathS != 174.5 {
		t.Errorf("critical path = %v s, want 174.5", a.CriticalPathS)
	}
	if a.MakespanS != 174.5 {
		t.Errorf("makespan(4) = %v, want 174.5", a.MakespanS)
	}
	if math.Abs(a.Speedup-1.58) > 0.005 || !near(a.Speedup, 275/174.5) {
		t.Errorf("speedup = %v, want ≈ 1.58", a.Speedup)
	}
	// {v2, v3, v6} are independent (so are {v2, v3, v4}), and no four
	// tasks are: the chains v1→v2→v5→v7, v3 and v4→v6 cover the plan.
	if a.Width != 3 || !a.WidthExact || !slices.Equal(a.Antichain, []string{"v2", "v3", "v6"}) || a.LevelWidth != 3 || a.Levels != 4 {
		t.Errorf("width = %d (exact %v, %v), level width %d over %d levels; want 3 {v2 v3 v6}, 3 over 4", a.Width, a.WidthExact, a.Antichain, a.LevelWidth, a.Levels)
	}
	if a.PeakParallelism != 3 {
		t.Errorf("peak parallelism = %d, want 3", a.PeakParallelism)
	}
	// Alone: v1 (20.5), v5 after v6 ends (105.5-79 = 26.5), v7 (69) → 116/275.
	if !near(a.SerialFraction, 116.0/275) {
		t.Errorf("serial fraction = %v, want %v", a.SerialFraction, 116.0/275)
	}
	if want := 1 / (116.0/275 + (1-116.0/275)/4); !near(a.AmdahlBound, want) {
		t.Errorf("amdahl = %v, want %v", a.AmdahlBound, want)
	}
	if !near(a.SpanBound, 275/174.5) {
		t.Errorf("span bound = %v", a.SpanBound)
	}
	// One worker: makespan is the work. Two workers: v2 and v3 go first
	// (bottom level 154 against v4's 127.5), then v4 beats v5 (112), and v7
	// starts after v6 at 121: 190 s, which is optimal here.
	if a1 := p.Analyze(1); a1.MakespanS != 275 || a1.Speedup != 1 {
		t.Errorf("1 worker: makespan %v speedup %v", a1.MakespanS, a1.Speedup)
	}
	a2 := p.Analyze(2)
	if a2.MakespanS != 190 {
		t.Errorf("2 workers: makespan %v, want 190", a2.MakespanS)
	}
	if a2.Schedule[1].ID != "v2" || a2.Schedule[2].ID != "v3" || a2.Schedule[3].ID != "v4" {
		t.Errorf("2 workers: schedule %+v does not start v2, v3 before v4", a2.Schedule)
	}
	bl := p.BottomLevels()
	if bl["v1"] != 174.5 || bl["v4"] != 127.5 || bl["v7"] != 69 {
		t.Errorf("bottom levels %v", bl)
	}
	// Defaults and normalization.
	if d := p.Task("v6").Deps[0]; d.Kind != envelope.DepControl {
		t.Errorf("v6 dep kind %q", d.Kind)
	}
	if d := p.Task("v2").Deps[0]; d.Kind != envelope.DepData {
		t.Errorf("default dep kind %q", d.Kind)
	}
	v1 := p.Task("v1")
	if !slices.Equal(v1.Forbidden, envelope.BuiltinPatterns()) || v1.LeaseS != DefaultLeaseS || v1.CheckTimeoutS != DefaultCheckTimeoutS {
		t.Errorf("defaults: %+v", v1)
	}
	if !p.Agents["claude"].Builtin || p.Agents["sh"].Argv[0] != "sh" || p.IntegrationBranch != "" {
		t.Errorf("agents %+v", p.Agents)
	}
}

// TestJSONPlan parses the worked example written as JSON.
func TestJSONPlan(t *testing.T) {
	t.Parallel()
	src := `{
	"version": 1,
	"integration_branch": "main",
	"agents": {"sh": {"kind": "command", "argv": ["true"]}},
	"tasks": [
		{"id": "a", "objective": "x", "agent": "sh", "write_scope": ["./src//a/"], "estimate_s": 1},
		{"id": "b", "objective": "y\/z", "agent": "sh", "write_scope": ["."], "deps": ["a"], "forbidden": []}
	]
}`
	p := mustParse(t, src)
	if p.IntegrationBranch != "main" || len(p.Tasks) != 2 || p.MaxParallel != DefaultMaxParallel {
		t.Fatalf("plan %+v", p)
	}
	if got := p.Task("a").WriteScope; !slices.Equal(got, []string{"src/a/"}) {
		t.Errorf("scope %v not normalized", got)
	}
	b := p.Task("b")
	if len(b.Forbidden) != 0 || !b.EstimateDefaulted || b.EstimateS != DefaultEstimateS || b.Objective != "y/z" {
		t.Errorf("task b %+v", b)
	}
	if a := p.Analyze(0); a.Workers != DefaultMaxParallel || a.DefaultedEstimates != 1 {
		t.Errorf("analysis %+v", a)
	}
}

type fakeRepo struct {
	current  string
	branches []string
	dirty    []string
}

func (f fakeRepo) CurrentBranch(context.Context) (string, error) {
	if f.current == "" {
		return "", errors.New("HEAD is detached")
	}
	return f.current, nil
}
func (f fakeRepo) BranchExists(_ context.Context, b string) (bool, error) {
	return slices.Contains(f.branches, b), nil
}
func (f fakeRepo) DirtyPaths(context.Context) ([]string, error) { return f.dirty, nil }

func TestCheckRepo(t *testing.T) {
	t.Parallel()
	withBranch := strings.Replace(worked, "max_parallel: 4\n", "max_parallel: 4\nintegration_branch: trunk\n", 1)
	tests := []struct {
		name   string
		src    string
		repo   fakeRepo
		branch string
		want   []error
		line   int
	}{
		{"current branch", worked, fakeRepo{current: "main", branches: []string{"main"}}, "main", nil, 0},
		{"named branch", withBranch, fakeRepo{current: "main", branches: []string{"main", "trunk"}}, "trunk", nil, 0},
		{"missing branch", withBranch, fakeRepo{current: "main", branches: []string{"main"}}, "", []error{ErrNoBranch}, 3},
		{"detached", worked, fakeRepo{}, "", []error{ErrNoBranch}, 0},
		{"dirty", worked, fakeRepo{current: "main", branches: []string{"main"}, dirty: []string{"a.go", "b.go"}}, "", []error{ErrDirtyTree}, 0},
		{"both", withBranch, fakeRepo{current: "main", dirty: []string{"x"}}, "", []error{ErrNoBranch, ErrDirtyTree}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustParse(t, tt.src)
			branch, err := p.CheckRepo(t.Context(), tt.repo)
			if branch != tt.branch {
				t.Errorf("branch = %q, want %q", branch, tt.branch)
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want %v", err, w)
				}
			}
			if tt.want == nil && err != nil {
				t.Errorf("err = %v", err)
			}
			var fe *FieldError
			if errors.As(err, &fe) && fe.Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", fe.Line, tt.line, fe)
			}
		})
	}
}

// TestPlanSealed: plan-wide sealed paths join every task's own, cleaned.
func TestPlanSealed(t *testing.T) {
	t.Parallel()
	p := mustParse(t, "version: 1\nsealed: [./tests/golden/, LICENSE]\ntasks:\n  - {id: a, objective: x, agent: claude, write_scope: [.], sealed: [docs//api]}\n")
	if got := p.Task("a").Sealed; !slices.Equal(got, []string{"docs/api", "tests/golden/", "LICENSE"}) {
		t.Errorf("sealed %v", got)
	}
	_, err := Parse("p.yaml", []byte("version: 1\nsealed: [/etc, ok]\ntasks:\n  - {id: a, objective: x, agent: claude, write_scope: [.], sealed: [../x, fine]}\n"))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 2 || errs[0].Path != "sealed[0]" || errs[1].Path != "tasks[0].sealed[0]" {
		t.Errorf("err = %v", err)
	}
}
