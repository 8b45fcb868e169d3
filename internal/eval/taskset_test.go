package eval

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/plan"
)

// shipped loads one of the task sets under examples/.
func shipped(t *testing.T, name string) *TaskSet {
	t.Helper()
	ts, err := Load(filepath.Join(envtest.ModuleRoot(t), "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestShippedSets: both shipped sets load; their scripted arms do the same
// work (the single agent writes the union of the swarm's files, nothing
// else and nothing different); the parallel set has no dependencies and
// the sequential one is a chain.
func TestShippedSets(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		dir, name string
		tasks     int
		chain     bool
	}{
		{"eval-parallel", "kit-parallel", 5, false},
		{"eval-sequential", "calc-sequential", 4, true},
	} {
		ts := shipped(t, tt.dir)
		if ts.Name != tt.name || len(ts.Tasks) != tt.tasks || ts.Scripted == nil || ts.Scripted.Single != "" {
			t.Fatalf("%s: %+v", tt.dir, ts)
		}
		for i, task := range ts.Tasks {
			if task.PromptText == "" || len(task.HiddenChecks) != 2 {
				t.Errorf("%s/%s: prompt %q, hidden checks %v", tt.dir, task.ID, task.PromptText, task.HiddenChecks)
			}
			wantDeps := []string(nil)
			if tt.chain && i > 0 {
				wantDeps = []string{ts.Tasks[i-1].ID}
			}
			if !slices.Equal(task.Deps, wantDeps) {
				t.Errorf("%s/%s: deps %v, want %v", tt.dir, task.ID, task.Deps, wantDeps)
			}
		}
		single, err := ts.ScriptedFiles(Single)
		if err != nil {
			t.Fatal(err)
		}
		swarm, err := ts.ScriptedFiles(Swarm)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for id, files := range swarm {
			if len(files) == 0 {
				t.Errorf("%s: the scripted %s agent writes nothing", tt.dir, id)
			}
			for p, c := range files {
				n++
				if single[SingleTaskID][p] != c {
					t.Errorf("%s: the single agent does not write %s as the %s agent does", tt.dir, p, id)
				}
			}
		}
		if len(single[SingleTaskID]) != n {
			t.Errorf("%s: the single agent writes %d files, the swarm %d", tt.dir, len(single[SingleTaskID]), n)
		}
		if _, err := ts.Digest(); err != nil {
			t.Error(err)
		}
	}
}

// TestScriptedSteps: a swarm agent reads what its task needs and writes
// its files; the single agent reads each file once, never one it wrote,
// and writes each file under the first task whose scope holds it.
func TestScriptedSteps(t *testing.T) {
	t.Parallel()
	ts := shipped(t, "eval-sequential")
	sw, err := ts.ScriptedSteps(Swarm)
	if err != nil {
		t.Fatal(err)
	}
	if got := stepNames(sw["session"]); !slices.Equal(got, []string{"read calc/doc.go", "read calc/lex.go", "read calc/parse.go", "read calc/eval.go",
		"write calc/session.go", "write calc/session_test.go", "write cmd/calc/main.go"}) {
		t.Errorf("the swarm's session agent: %v", got)
	}
	single, err := ts.ScriptedSteps(Single)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"read calc/doc.go", "write calc/lex.go", "write calc/lex_test.go", "write calc/parse.go", "write calc/parse_test.go",
		"write calc/eval.go", "write calc/eval_test.go", "write calc/session.go", "write calc/session_test.go", "write cmd/calc/main.go"}
	if got := stepNames(single[SingleTaskID]); !slices.Equal(got, want) {
		t.Errorf("the single agent:\n got %v\nwant %v", got, want)
	}
	par := shipped(t, "eval-parallel")
	single, err = par.ScriptedSteps(Single)
	if err != nil {
		t.Fatal(err)
	}
	if got := stepNames(single[SingleTaskID]); len(got) != 20 || got[0] != "read ring/ring.go" || got[3] != "write ring/ring.go" || got[19] != "write bitset/extra_test.go" {
		t.Errorf("the single agent of the parallel set: %v", got)
	}
}

func stepNames(steps []Step) []string {
	var out []string
	for _, s := range steps {
		if s.Read != "" {
			out = append(out, "read "+s.Read)
		} else {
			out = append(out, "write "+s.Write)
		}
	}
	return out
}

func TestBuildPlan(t *testing.T) {
	t.Parallel()
	ts := shipped(t, "eval-parallel")
	o := Options{Budget: Budget{USD: 3, Tokens: 1000}, Agent: plan.Agent{Kind: "claude", Env: map[string]string{"K": "v"}}}
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
		for _, task := range p.Tasks {
			// Every task may use the arm's whole budget: the gateway, not
			// a split made in advance, holds the arm to it.
			if math.Abs(task.Budget.USD-3) > 1e-9 || !slices.Contains(task.Checks, "go vet ./...") {
				t.Errorf("%s task %s: budget %+v, checks %v", arm, task.ID, task.Budget, task.Checks)
			}
		}
		switch arm {
		case Single:
			task := p.Tasks[0]
			if len(p.Tasks) != 1 || p.MaxParallel != 1 || task.ID != SingleTaskID || len(task.WriteScope) != 5 ||
				!strings.Contains(task.Objective, "## Task 5: bitset") || !strings.Contains(task.Objective, "PushOverwrite(v T)") {
				t.Errorf("single plan: %d tasks, max parallel %d, %+v", len(p.Tasks), p.MaxParallel, task)
			}
		case Swarm:
			if len(p.Tasks) != 5 || p.MaxParallel != 5 {
				t.Errorf("swarm plan: %+v", p.Tasks)
			}
		}
	}
	o.MaxParallel = 2
	data, err := BuildPlan(ts, Swarm, o)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := plan.Parse("plan.json", data); err != nil || p.MaxParallel != 2 {
		t.Errorf("--max-parallel 2: %v, %+v", err, p)
	}
}

func TestGrading(t *testing.T) {
	t.Parallel()
	ts := shipped(t, "eval-sequential")
	g := ts.Grading()
	if len(g) != 2+4*2 || g[0] != (GradingCheck{Kind: Visible, Command: "go vet ./..."}) ||
		g[2] != (GradingCheck{Task: "lex", Kind: Hidden, Command: "go test -count=1 -run '^TestHiddenLexTokens$' ./calc"}) {
		t.Errorf("grading %+v", g)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	base := map[string]string{"repo/x": "x", "tasks/a/prompt.md": "do a\n", "outside.md": "x", "sw/a/x": "y"}
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
		"no swarm dir":   "version: 1\nname: s\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\nscripted: {turn_s: 1}\n",
		"old delay":      "version: 1\nname: s\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\nscripted: {swarm: sw, delay_s: 1}\n",
		"turn":           "version: 1\nname: s\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\nscripted: {swarm: sw, turn_s: -1}\n",
		"reads task":     "version: 1\nname: s\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\nscripted: {swarm: sw, reads: {b: [x]}}\n",
		"reads path":     "version: 1\nname: s\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\nscripted: {swarm: sw, reads: {a: [../x]}}\n",
		"reads blank":    "version: 1\nname: s\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\nscripted: {swarm: sw, reads: {a: [' ']}}\n",
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
	// Two swarm agents writing one file differently leave the single
	// agent's work undefined.
	clash := writeSet(t, map[string]string{ManifestName: "version: 1\nname: s\ntasks:\n  - {id: a, write_scope: [x], hidden_checks: [true]}\n" +
		"  - {id: b, write_scope: [x], hidden_checks: [true]}\nscripted: {swarm: sw}\n",
		"repo/x": "x", "tasks/a/prompt.md": "a", "tasks/b/prompt.md": "b", "sw/a/x": "1", "sw/b/x": "2"})
	ts, err := Load(clash)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.ScriptedFiles(Single); !errors.Is(err, ErrTaskSet) {
		t.Errorf("clashing swarm trees: %v", err)
	}
	ts, err = Load(shellSet(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{}, {Runtime: realRuntime{}, WorkDir: "x"}, {Runtime: realRuntime{}, WorkDir: "x", Budget: Budget{USD: 1}},
		{Runtime: realRuntime{}, WorkDir: "x", Budget: Budget{USD: 1, Tokens: -1}, Agent: plan.Agent{Kind: "claude"}}} {
		if _, err := Run(t.Context(), ts, o); !errors.Is(err, ErrOptions) {
			t.Errorf("Run(%+v): %v, want ErrOptions", o, err)
		}
	}
}

// TestShippedSetsAreSound lays every scripted file and every hidden file
// of each shipped set over its base repository and runs all of the set's
// checks there: each passes. On the base repository alone each hidden
// check fails, so none of them passes work that was never done.
func TestShippedSetsAreSound(t *testing.T) {
	t.Parallel()
	envtest.Command(t, "go")
	for _, set := range []string{"eval-parallel", "eval-sequential"} {
		t.Run(set, func(t *testing.T) {
			t.Parallel()
			ts := shipped(t, set)
			base, done := filepath.Join(t.TempDir(), "base"), filepath.Join(t.TempDir(), "done")
			for _, dir := range []string{base, done} {
				if err := copyTree(ts.Repo, dir); err != nil {
					t.Fatal(err)
				}
			}
			files, err := ts.ScriptedFiles(Single)
			if err != nil {
				t.Fatal(err)
			}
			for p, c := range files[SingleTaskID] {
				full := filepath.Join(done, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, task := range ts.Tasks {
				for _, dir := range []string{base, done} {
					if err := copyTree(task.Hidden, dir); err != nil {
						t.Fatal(err)
					}
				}
			}
			run := func(dir, cmd string) int {
				r, err := realRuntime{}.Check(t.Context(), Check{Command: cmd, Dir: dir, Timeout: 5 * time.Minute, Log: filepath.Join(t.TempDir(), "log")})
				if err != nil {
					t.Fatal(err)
				}
				return r.Exit
			}
			for _, c := range ts.Grading() {
				if exit := run(done, c.Command); exit != 0 {
					t.Errorf("%s check %q of task %q fails on the scripted work: exit %d", c.Kind, c.Command, c.Task, exit)
				}
				if c.Kind == Hidden {
					if exit := run(base, c.Command); exit == 0 {
						t.Errorf("hidden check %q of task %s passes on the base repository", c.Command, c.Task)
					}
				}
			}
		})
	}
}
