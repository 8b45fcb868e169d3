package eval

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// gitEnv isolates test repositories from the user's git configuration.
var gitEnv = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}

// realRuntime wires eval to apiary's real git plumbing, runtime and gates,
// as the CLI does.
type realRuntime struct{}

func (realRuntime) repo(dir string) *git.Repo {
	return git.New(dir, git.Options{Env: append(os.Environ(), gitEnv...)})
}

func (r realRuntime) InitRepo(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, "git", "init", "--quiet", "--initial-branch=main", dir)
	cmd.Env = append(os.Environ(), gitEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return errors.New(string(out))
	}
	_, err := r.repo(dir).CommitAll(ctx, git.CommitOptions{Message: "base\n", Author: git.Signature{Name: "t", Email: "t@apiary.invalid"}})
	return err
}

func (r realRuntime) Run(ctx context.Context, arm Arm, dir string, planData []byte) (*runs.Report, error) {
	id, err := rundir.NewID(time.Now(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return runs.Start(ctx, runs.Config{Repo: r.repo(dir), ReconcileAgent: "agent"}, runs.NewRun{ID: id, PlanFile: "plan.json", PlanData: planData})
}

func (r realRuntime) Export(ctx context.Context, dir, rev, dst string) error {
	wt := filepath.Join(filepath.Dir(dst), ".export")
	if err := r.repo(dir).WorktreeAddDetached(ctx, wt, rev); err != nil {
		return err
	}
	defer r.repo(dir).WorktreeRemove(context.WithoutCancel(ctx), wt)
	return copyTree(wt, dst)
}

func (realRuntime) Check(ctx context.Context, c Check) (CheckResult, error) {
	res, err := gate.RunCheck(ctx, gate.CheckCommand{Command: c.Command, Dir: c.Dir, Log: c.Log, Timeout: c.Timeout})
	return CheckResult{Exit: res.Exit, TimedOut: res.TimedOut, Seconds: res.Duration}, err
}

// writeSet writes a task set from a map of path to content.
func writeSet(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// shellSet is a task set of shell-checked text files: "b" passes the gates
// in the swarm but its hidden check rejects it; the single agent gets both
// right. Scripted agents work 0.4 s per task.
func shellSet(t *testing.T) string {
	return writeSet(t, map[string]string{
		ManifestName: `version: 1
name: shell
checks: ["test -f base.txt"]
check_timeout_s: 30
tasks:
  - id: a
    write_scope: [a.txt]
    checks: ["grep -q alpha a.txt"]
    hidden_checks: ["grep -qx alpha a.txt", "sh hidden-a.sh"]
  - id: b
    deps: [a]
    write_scope: [b.txt]
    hidden_checks: ["grep -qx 'beta two' b.txt"]
scripted:
  single: scripted/single
  swarm: scripted/swarm
  delay_s: 0.4
`,
		"repo/base.txt":              "base\n",
		"tasks/a/prompt.md":          "Write alpha to a.txt.\n",
		"tasks/b/prompt.md":          "Write 'beta two' to b.txt.\n",
		"tasks/a/hidden/hidden-a.sh": "grep -q alpha a.txt && echo SECRET-HIDDEN-MARKER >/dev/null\n",
		"scripted/single/a.txt":      "alpha\n",
		"scripted/single/b.txt":      "beta two\n",
		"scripted/swarm/a/a.txt":     "alpha\n",
		"scripted/swarm/b/b.txt":     "beta\n",
	})
}

// TestRunScripted runs both arms with real git, runtime and gates and
// scripted command agents, and judges them.
func TestRunScripted(t *testing.T) {
	t.Parallel()
	envtest.Command(t, "git")
	ts, err := Load(shellSet(t))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	agent, err := WriteScriptedAgents(ts, filepath.Join(work, "agents"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), ts, Options{BudgetUSD: 2, Agent: agent, Runtime: realRuntime{}, WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	s, w := res.Single, res.Swarm
	if s.Accepted != 2 || s.Quality != 1 || s.Status != "succeeded" {
		t.Errorf("single: %+v", s)
	}
	// b passed apiary's gates in the swarm, but not its hidden check.
	if w.Accepted != 1 || w.Quality != 0.5 || w.Tasks[1].GateStatus != "succeeded" || w.Tasks[1].HiddenPassed || w.Tasks[1].Accepted {
		t.Errorf("swarm: %+v", w)
	}
	if len(s.Tasks[0].Hidden) != 2 || s.Tasks[0].Hidden[1].Exit != 0 {
		t.Errorf("task a's two hidden checks: %+v", s.Tasks[0].Hidden)
	}
	// Command agents report no cost: cost per accepted task is known to be
	// zero, and ties.
	if res.CostKnown || *s.CostPerAccepted != 0 || res.TokenAmplification != nil {
		t.Errorf("costs: known %v, single %v, amplification %v", res.CostKnown, *s.CostPerAccepted, res.TokenAmplification)
	}
	if res.Verdict != VerdictSingle || !strings.HasPrefix(res.Reasons[0], "quality: swarm worse 0.50 vs single 1.00") {
		t.Errorf("verdict %q %q", res.Verdict, res.Reasons)
	}
	if s.CriticalPathS < 0.8 || w.CriticalPathS <= 0 {
		t.Errorf("critical paths: single %g (two scripted tasks of 0.4 s), swarm %g", s.CriticalPathS, w.CriticalPathS)
	}
	// Hidden checks never reached the agents: not in either repository's
	// history, files or run records.
	for _, arm := range []ArmResult{s, w} {
		assertNoHidden(t, arm.Repo, "SECRET-HIDDEN-MARKER", "grep -qx", "hidden-a.sh")
	}
	b, err := json.Marshal(res)
	if err != nil || !strings.Contains(string(b), `"verdict":"single agent preferred"`) {
		t.Errorf("JSON: %v %s", err, b)
	}
}

// assertNoHidden fails if any file of the repository (its .git and
// .apiary included) holds one of the hidden markers.
func assertNoHidden(t *testing.T, repo string, markers ...string) {
	t.Helper()
	err := filepath.WalkDir(repo, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range markers {
			if strings.Contains(string(b), m) {
				t.Errorf("%s holds the hidden check's %q", p, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Objects are compressed: ask git for every blob's content too.
	cmd := exec.Command("sh", "-c", "git -C \"$1\" cat-file --batch-all-objects --batch", "sh", repo)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range markers {
		if strings.Contains(string(out), m) {
			t.Errorf("a git object of %s holds the hidden check's %q", repo, m)
		}
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	c := func(v float64) *float64 { return &v }
	arm := func(q, cp float64, cost *float64) ArmResult {
		return ArmResult{Quality: q, CriticalPathS: cp, CostPerAccepted: cost}
	}
	tests := []struct {
		name          string
		single, swarm ArmResult
		want          string
	}{
		{"better everywhere", arm(0.5, 100, c(2)), arm(1, 50, c(1)), VerdictSwarm},
		{"faster, else equal", arm(1, 100, c(1)), arm(1, 60, c(1)), VerdictSwarm},
		{"all equal", arm(1, 100, c(1)), arm(1, 100, c(1)), VerdictSingle},
		{"faster but dearer", arm(1, 100, c(1)), arm(1, 40, c(1.5)), VerdictSingle},
		{"faster but worse", arm(1, 100, c(1)), arm(0.75, 40, c(0.5)), VerdictSingle},
		{"single accepted nothing", arm(0, 100, nil), arm(0.5, 100, c(3)), VerdictSwarm},
		{"swarm accepted nothing", arm(0.5, 100, c(3)), arm(0, 10, nil), VerdictSingle},
		{"neither accepted", arm(0, 100, nil), arm(0, 50, nil), VerdictSwarm},
	}
	for _, tt := range tests {
		if got, reasons := Compare(tt.single, tt.swarm); got != tt.want || len(reasons) != 3 {
			t.Errorf("%s: %q %q, want %q", tt.name, got, reasons, tt.want)
		}
	}
}

func TestLoadShipped(t *testing.T) {
	t.Parallel()
	ts, err := Load(filepath.Join(envtest.ModuleRoot(t), "examples", "eval-textkit"))
	if err != nil {
		t.Fatal(err)
	}
	if ts.Name != "textkit" || len(ts.Tasks) != 4 || ts.Task("palindrome").Deps[0] != "reverse" || ts.Scripted == nil {
		t.Fatalf("task set %+v", ts)
	}
	for _, task := range ts.Tasks {
		if task.PromptText == "" || len(task.HiddenChecks) == 0 {
			t.Errorf("task %s: prompt %q, hidden checks %v", task.ID, task.PromptText, task.HiddenChecks)
		}
		if _, err := os.Stat(task.Hidden); err != nil {
			t.Errorf("task %s: hidden files: %v", task.ID, err)
		}
	}
	for _, arm := range []Arm{Single, Swarm} {
		files, err := ts.ScriptedFiles(arm)
		if err != nil || (arm == Single && len(files[SingleTaskID]) != 8) || (arm == Swarm && len(files) != 4) {
			t.Errorf("%s scripted files: %v, %v", arm, files, err)
		}
	}
}

func TestBuildPlan(t *testing.T) {
	t.Parallel()
	ts, err := Load(filepath.Join(envtest.ModuleRoot(t), "examples", "eval-textkit"))
	if err != nil {
		t.Fatal(err)
	}
	o := Options{BudgetUSD: 3, Agent: plan.Agent{Kind: "claude", Env: map[string]string{"K": "v"}}}
	for _, arm := range []Arm{Single, Swarm} {
		data, err := BuildPlan(ts, arm, o)
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Parse("plan.json", data)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "Hidden") || strings.Contains(string(data), "hidden") {
			t.Errorf("%s plan mentions the hidden checks:\n%s", arm, data)
		}
		if a := p.Agents["agent"]; a.Env["APIARY_EVAL_ARM"] != string(arm) || a.Env["K"] != "v" {
			t.Errorf("%s agent env %v", arm, a.Env)
		}
		budget := 0.0
		for _, task := range p.Tasks {
			budget += task.Budget.USD
			if !slices.Contains(task.Checks, "go vet ./...") {
				t.Errorf("%s task %s lacks the set's checks: %v", arm, task.ID, task.Checks)
			}
		}
		if math.Abs(budget-3) > 1e-9 {
			t.Errorf("%s plan budgets sum to %g, want 3", arm, budget)
		}
		switch arm {
		case Single:
			task := p.Tasks[0]
			if len(p.Tasks) != 1 || p.MaxParallel != 1 || task.ID != SingleTaskID || len(task.WriteScope) != 8 ||
				!strings.Contains(task.Objective, "## Task 4: topwords") || !strings.Contains(task.Objective, "Reverse(\"héllo\")") {
				t.Errorf("single plan: %d tasks, max parallel %d, %+v", len(p.Tasks), p.MaxParallel, task)
			}
		case Swarm:
			if len(p.Tasks) != 4 || p.MaxParallel != 4 || p.Task("palindrome").Deps[0].Task != "reverse" ||
				math.Abs(p.Task("topwords").Budget.USD-3*90.0/270) > 1e-9 {
				t.Errorf("swarm plan: %+v", p.Tasks)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	base := map[string]string{"repo/x": "x", "tasks/a/prompt.md": "do a\n", "outside.md": "x"}
	tests := map[string]string{
		"version":        "version: 2\nname: s\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\n",
		"no name":        "version: 1\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\n",
		"unknown field":  "version: 1\nname: s\nbogus: 1\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\n",
		"no tasks":       "version: 1\nname: s\n",
		"bad id":         "version: 1\nname: s\ntasks: [{id: A!, write_scope: [x], hidden_checks: [true]}]\n",
		"reserved id":    "version: 1\nname: s\ntasks: [{id: all-tasks, write_scope: [x], hidden_checks: [true]}]\n",
		"duplicate":      "version: 1\nname: s\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}, {id: a, write_scope: [x], hidden_checks: [true]}]\n",
		"no scope":       "version: 1\nname: s\ntasks: [{id: a, hidden_checks: [true]}]\n",
		"no hidden":      "version: 1\nname: s\ntasks: [{id: a, write_scope: [x]}]\n",
		"unknown dep":    "version: 1\nname: s\ntasks: [{id: a, deps: [b], write_scope: [x], hidden_checks: [true]}]\n",
		"escaping":       "version: 1\nname: s\ntasks: [{id: a, prompt: ../outside.md, write_scope: [x], hidden_checks: [true]}]\n",
		"no prompt":      "version: 1\nname: s\ntasks: [{id: b, write_scope: [x], hidden_checks: [true]}]\n",
		"no repo":        "version: 1\nname: s\nrepo: nope\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\n",
		"bad timeout":    "version: 1\nname: s\ncheck_timeout_s: -1\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\n",
		"scripted dir":   "version: 1\nname: s\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\nscripted: {single: nope, swarm: nope}\n",
		"not yaml":       "version: [\n",
		"negative wall":  "version: 1\nname: s\ntasks: [{id: a, wall_clock_s: -5, write_scope: [x], hidden_checks: [true]}]\n",
		"absolute repo":  "version: 1\nname: s\nrepo: /etc\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\n",
		"hidden is file": "version: 1\nname: s\ntasks: [{id: a, hidden: outside.md, write_scope: [x], hidden_checks: [true]}]\n",
	}
	for name, manifest := range tests {
		files := map[string]string{ManifestName: manifest}
		for k, v := range base {
			files[k] = v
		}
		if _, err := Load(writeSet(t, files)); !errors.Is(err, ErrTaskSet) {
			t.Errorf("%s: err %v, want ErrTaskSet", name, err)
		}
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrTaskSet) {
		t.Errorf("no manifest: %v", err)
	}
	ts, err := Load(shellSet(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{}, {Runtime: realRuntime{}, WorkDir: "x"}, {Runtime: realRuntime{}, WorkDir: "x", BudgetUSD: 1}} {
		if _, err := Run(t.Context(), ts, o); !errors.Is(err, ErrOptions) {
			t.Errorf("Run(%+v): %v, want ErrOptions", o, err)
		}
	}
}

func TestChart(t *testing.T) {
	t.Parallel()
	c := func(v float64) *float64 { return &v }
	r := Result{TaskSet: "s", BudgetUSD: 1, Single: ArmResult{Quality: 1, CriticalPathS: 100, CostPerAccepted: c(2)},
		Swarm: ArmResult{Quality: 0.5, CriticalPathS: 50, CostPerAccepted: nil}}
	ch := r.Chart()
	want := [][]float64{{1, 1, 0}, {0.5, 0.5, 1}}
	for i, s := range ch.Series {
		for k, v := range s.Y {
			if math.Abs(v-want[i][k]) > 1e-9 {
				t.Errorf("series %s: %v, want %v", s.Name, s.Y, want[i])
				break
			}
		}
	}
	if _, err := ch.SVG(); err != nil {
		t.Fatal(err)
	}
}
