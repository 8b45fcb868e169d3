package eval

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// gitEnv isolates test repositories from the user's git configuration.
var gitEnv = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}

// realRuntime wires eval to apiary's real git plumbing, runtime and gates,
// as Local does, with git isolated from the user's configuration.
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

func (r realRuntime) Run(ctx context.Context, dir string, planData []byte, models attempt.ModelAccess) (*runs.Report, error) {
	id, err := rundir.NewID(time.Now(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return runs.Start(ctx, runs.Config{Repo: r.repo(dir), Models: models, ReconcileAgent: "agent"}, runs.NewRun{ID: id, PlanFile: "plan.json", PlanData: planData})
}

func (r realRuntime) Export(ctx context.Context, dir, rev, dst string) error {
	wt := filepath.Join(filepath.Dir(dst), ".export-"+filepath.Base(dst))
	if err := r.repo(dir).WorktreeAddDetached(ctx, wt, rev); err != nil {
		return err
	}
	defer r.repo(dir).WorktreeRemove(context.WithoutCancel(ctx), wt)
	return copyDir(wt, dst)
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

// evaluate runs both arms of the task set in dir with scripted command
// agents and real git, runtime and gates, without a gateway.
// evaluateTimed evaluates the set up to three times, until the arms'
// times stand as want says: the time axis compares two wall clocks of
// one machine, and on a loaded one an arm's run can stall for seconds
// (seen: the single agent's 1.5 s of turns taking 11.6 s). A property that
// fails three runs in a row is not a stall.
func evaluateTimed(t *testing.T, dir string, maxParallel int, want func(*Result) bool) *Result {
	t.Helper()
	var res *Result
	for run := 1; run <= 3; run++ {
		if res = evaluate(t, dir, maxParallel); want(res) {
			return res
		}
		t.Logf("run %d: single %.2fs, swarm %.2fs; running again", run, res.Single.TimeS, res.Swarm.TimeS)
	}
	return res
}

func evaluate(t *testing.T, dir string, maxParallel int) *Result {
	t.Helper()
	envtest.Command(t, "git")
	ts, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	agent, err := WriteScriptedAgents(ts, filepath.Join(work, "agents"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), ts, Options{Budget: Budget{USD: 2}, Agent: agent, MaxParallel: maxParallel, Runtime: realRuntime{}, WorkDir: work, Scripted: true})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// shellSet is a task set of shell-checked text files: "b" passes the gates
// in the swarm but its hidden check rejects it; the single agent gets both
// right.
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
  turn_s: 0.2
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
// scripted command agents, and grades them check by check.
func TestRunScripted(t *testing.T) {
	t.Parallel()
	res := evaluate(t, shellSet(t), 0)
	s, w := res.Single, res.Swarm
	// The grading: the set's check, a's visible and two hidden, b's hidden.
	if len(res.Inputs.Grading) != 5 || s.ChecksTotal != 5 || w.ChecksTotal != 5 {
		t.Fatalf("grading %+v; totals %d, %d", res.Inputs.Grading, s.ChecksTotal, w.ChecksTotal)
	}
	if s.ChecksPassed != 5 || s.Quality != 1 || s.Accepted != 2 || s.Status != "succeeded" {
		t.Errorf("single: %+v", s)
	}
	// b passed apiary's gates in the swarm, but not its hidden check.
	if w.ChecksPassed != 4 || w.Quality != 0.8 || w.Accepted != 1 || !w.Tasks[1].Integrated || w.Tasks[1].Accepted || w.Tasks[1].ChecksPassed != 0 {
		t.Errorf("swarm: %+v", w)
	}
	if c := s.Checks[3]; c.Task != "a" || c.Kind != Hidden || c.Command != "sh hidden-a.sh" || !c.Passed {
		t.Errorf("a's second hidden check: %+v", c)
	}
	// Without a gateway nothing is metered: cost and tokens are n/a, and
	// cost gives no verdict.
	if res.CostKnown || s.CostKnown || s.CostPerAccepted != nil || res.TokenAmplification != nil {
		t.Errorf("costs: known %v/%v, single %v, amplification %v", res.CostKnown, s.CostKnown, s.CostPerAccepted, res.TokenAmplification)
	}
	if res.Verdict != VerdictSingle || !strings.HasPrefix(res.Reasons[0], "quality: swarm worse 0.80 vs single 1.00") ||
		!strings.HasPrefix(res.Reasons[2], "cost per accepted task: n/a, no verdict on this axis") {
		t.Errorf("verdict %q %q", res.Verdict, res.Reasons)
	}
	// The time axis runs to the last integration; the single agent worked
	// three turns of 0.2 s.
	if s.TimeTo != "last integration" || s.TimeS < 0.6 || w.TimeS <= 0 {
		t.Errorf("times: single %g (to %s), swarm %g", s.TimeS, s.TimeTo, w.TimeS)
	}
	// Coordination: the single agent's one envelope, receipt and
	// integration; the swarm's two of each.
	if s.Messages != 3 || s.MessagesPerTask != 1.5 || w.Messages != 6 || w.MessagesPerTask != 3 {
		t.Errorf("messages: single %d (%g/task), swarm %d (%g/task)", s.Messages, s.MessagesPerTask, w.Messages, w.MessagesPerTask)
	}
	// Hidden checks never reached the agents: not in either repository's
	// history, files or run records.
	for _, arm := range []ArmResult{s, w} {
		assertNoHidden(t, arm.Repo, "SECRET-HIDDEN-MARKER", "grep -qx", "hidden-a.sh")
	}
	b, err := json.Marshal(res)
	if err != nil || !strings.Contains(string(b), `"verdict":"single agent preferred"`) || !strings.Contains(string(b), `"task_set_sha256":"`) {
		t.Errorf("JSON: %v %s", err, b)
	}
}

// chainSet is a purely sequential task set of n shell tasks, each after
// the one before, each writing its file correctly (both arms do the same
// work: the single agent's tree is the swarm's union).
func chainSet(t *testing.T, n int, turnS float64) string {
	files := map[string]string{"repo/base.txt": "base\n"}
	var m strings.Builder
	fmt.Fprintf(&m, "version: 1\nname: chain\nchecks: [\"test -f base.txt\"]\ncheck_timeout_s: 30\ntasks:\n")
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		fmt.Fprintf(&m, "  - id: %s\n    write_scope: [%s.txt]\n    hidden_checks: [\"grep -qx v%d %s.txt\"]\n", id, id, i, id)
		if i > 0 {
			fmt.Fprintf(&m, "    deps: [t%d]\n", i-1)
		}
		files["tasks/"+id+"/prompt.md"] = fmt.Sprintf("Write v%d to %s.txt.\n", i, id)
		files["scripted/swarm/"+id+"/"+id+".txt"] = fmt.Sprintf("v%d\n", i)
	}
	fmt.Fprintf(&m, "scripted:\n  swarm: scripted/swarm\n  turn_s: %g\n", turnS)
	files[ManifestName] = m.String()
	return writeSet(t, files)
}

// TestSequentialSetPrefersTheSingleAgent: on a chain the swarm can run
// nothing in parallel and pays a handoff per task; with the same work and
// the same quality, the single agent wins the time axis and the verdict.
//
// It does not run in parallel with the package's other tests, and its turns
// are long enough (0.5 s) that the chain's extra turns outweigh a loaded
// machine's stalls: the axis compares the two arms of one run.
func TestSequentialSetPrefersTheSingleAgent(t *testing.T) {
	res := evaluateTimed(t, chainSet(t, 3, 0.5), 0, func(r *Result) bool { return r.Swarm.TimeS > r.Single.TimeS })
	s, w := res.Single, res.Swarm
	if s.Quality != 1 || w.Quality != 1 || s.Accepted != 3 || w.Accepted != 3 {
		t.Fatalf("quality: single %g (%d accepted), swarm %g (%d accepted)", s.Quality, s.Accepted, w.Quality, w.Accepted)
	}
	if res.Verdict != VerdictSingle || !strings.HasPrefix(res.Reasons[1], "time to last integration: swarm worse") || w.TimeS <= s.TimeS {
		t.Errorf("verdict %q %q (times: single %.2fs, swarm %.2fs)", res.Verdict, res.Reasons, s.TimeS, w.TimeS)
	}
}

// TestMaxParallelOneNeverWinsTime: a swarm allowed one agent at a time
// does the tasks one after another, each with its own handoff, so
// however the tasks depend on each other it never reaches its last
// integration before the single agent does — the time axis counts the
// waiting for a worker slot. Random task sets; the parallel swarm on the
// same sets shows the axis is not rigged against the swarm.
func TestMaxParallelOneNeverWinsTime(t *testing.T) {
	t.Parallel()
	rng := mrand.New(mrand.NewPCG(20, 1))
	for round := range 3 {
		// The swarm's agents take a turn each more than the single agent
		// (each gives its own final answer) and a handoff each: turns of
		// 0.3 s or more keep that gap above this machine's noise.
		n := 2 + rng.IntN(3)
		turnS := 0.3 + 0.1*float64(rng.IntN(3))
		files := map[string]string{"repo/base.txt": "base\n"}
		var m strings.Builder
		fmt.Fprintf(&m, "version: 1\nname: random%d\ncheck_timeout_s: 30\ntasks:\n", round)
		for i := range n {
			id := fmt.Sprintf("t%d", i)
			fmt.Fprintf(&m, "  - id: %s\n    write_scope: [%s.txt]\n    hidden_checks: [\"test -s %s.txt\"]\n", id, id, id)
			if i > 0 && rng.IntN(2) == 0 {
				fmt.Fprintf(&m, "    deps: [t%d]\n", rng.IntN(i))
			}
			files["tasks/"+id+"/prompt.md"] = "Write " + id + ".txt.\n"
			files["scripted/swarm/"+id+"/"+id+".txt"] = id + "\n"
		}
		fmt.Fprintf(&m, "scripted:\n  swarm: scripted/swarm\n  turn_s: %g\n", turnS)
		files[ManifestName] = m.String()
		dir := writeSet(t, files)
		t.Run(fmt.Sprintf("%d-tasks-turn-%.1fs", n, turnS), func(t *testing.T) {
			t.Parallel()
			res := evaluateTimed(t, dir, 1, func(r *Result) bool { return r.Swarm.TimeS > r.Single.TimeS })
			if res.Inputs.MaxParallel[Swarm] != 1 {
				t.Fatalf("max parallel %v", res.Inputs.MaxParallel)
			}
			if res.Swarm.TimeS <= res.Single.TimeS || !strings.HasPrefix(res.Reasons[1], "time to last integration: swarm worse") {
				t.Errorf("one agent at a time, the swarm took %.2fs against the single agent's %.2fs: %q", res.Swarm.TimeS, res.Single.TimeS, res.Reasons)
			}
			if res.Verdict != VerdictSingle {
				t.Errorf("verdict %q", res.Verdict)
			}
			// One at a time: no two attempts of the swarm overlapped, and
			// its time covers every one of them.
			evs, _, err := rundir.Open(res.Swarm.Repo, res.Swarm.RunID).Events()
			if err != nil {
				t.Fatal(err)
			}
			busy, running := 0.0, map[string]time.Time{}
			for _, ev := range evs {
				switch ev.Kind {
				case rundir.EvAttemptStarted:
					if len(running) > 0 {
						t.Errorf("%s started while %v ran", ev.Task, running)
					}
					running[ev.Task] = ev.Time
				case rundir.EvAttemptFinished:
					busy += ev.Time.Sub(running[ev.Task]).Seconds()
					delete(running, ev.Task)
				}
			}
			if res.Swarm.TimeS < busy {
				t.Errorf("the swarm's time %.2fs leaves out some of its %.2fs of attempts", res.Swarm.TimeS, busy)
			}
		})
	}
}

// TestTimeAxis: the time axis runs from the arm's start to its last
// integration — a task that waited for a worker slot counts, and what
// happened after the last integration does not; with nothing integrated
// it runs to the run's end.
func TestTimeAxis(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	evs := []rundir.Event{
		{Kind: rundir.EvRunStarted, Time: at(0.5)},
		{Kind: rundir.EvAttemptStarted, Task: "a", Time: at(1)},
		{Kind: rundir.EvAttemptFinished, Task: "a", Time: at(4)},
		{Kind: rundir.EvIntegrated, Task: "a", Time: at(4.5)},
		// b waited for a's slot: its 3 s of work start at 4.5 s.
		{Kind: rundir.EvAttemptStarted, Task: "b", Time: at(4.5)},
		{Kind: rundir.EvAttemptFinished, Task: "b", Time: at(7.5)},
		{Kind: rundir.EvIntegrated, Task: "b", Time: at(8)},
		{Kind: rundir.EvAttemptStarted, Task: "c", Time: at(8)},
		{Kind: rundir.EvAttemptFinished, Task: "c", Time: at(9)},
		{Kind: rundir.EvGateRejected, Task: "c", Time: at(9.5)},
		{Kind: rundir.EvTaskDone, Task: "c", Time: at(9.5)},
		{Kind: rundir.EvRunFinished, Time: at(10)},
	}
	var ar ArmResult
	ar.timeAndMessages(t0, evs, 3)
	if ar.TimeS != 8 || ar.TimeTo != "last integration" || ar.Messages != 9 || ar.MessagesPerTask != 3 {
		t.Errorf("time %g to %s, %d messages (%g per task)", ar.TimeS, ar.TimeTo, ar.Messages, ar.MessagesPerTask)
	}
	var none ArmResult
	none.timeAndMessages(t0, evs[:3], 1)
	if none.TimeS != 4 || none.TimeTo == "last integration" {
		t.Errorf("nothing integrated: time %g to %s", none.TimeS, none.TimeTo)
	}
}

// TestIdenticalWorkIdenticalQuality: both arms write the same files, one
// of them wrong enough to fail a visible check. The runtime rejects the
// single agent's work whole and the swarm's one task, yet the grading sees
// the same work and gives the same scores, check for check; acceptance
// (integration) is where the arms differ.
func TestIdenticalWorkIdenticalQuality(t *testing.T) {
	t.Parallel()
	dir := writeSet(t, map[string]string{
		ManifestName: `version: 1
name: same-work
checks: ["test -f base.txt"]
check_timeout_s: 30
tasks:
  - id: a
    write_scope: [a.txt]
    hidden_checks: ["grep -qx alpha a.txt"]
  - id: b
    write_scope: [b.txt]
    hidden_checks: ["grep -qx beta b.txt"]
  - id: c
    write_scope: [c.txt]
    checks: ["grep -qx gamma c.txt"]
    hidden_checks: ["grep -q gamma c.txt", "grep -qx gamma c.txt"]
scripted:
  swarm: scripted/swarm
`,
		"repo/base.txt":          "base\n",
		"tasks/a/prompt.md":      "a\n",
		"tasks/b/prompt.md":      "b\n",
		"tasks/c/prompt.md":      "c\n",
		"scripted/swarm/a/a.txt": "alpha\n",
		"scripted/swarm/b/b.txt": "beta\n",
		"scripted/swarm/c/c.txt": "gamma?\n",
	})
	res := evaluate(t, dir, 0)
	s, w := res.Single, res.Swarm
	if s.Status == "succeeded" || s.Tasks[0].Integrated || !slices.Equal(s.FromCandidates, []string{SingleTaskID}) {
		t.Fatalf("single: status %s, integrated %v, graded from %v", s.Status, s.Tasks[0].Integrated, s.FromCandidates)
	}
	if !w.Tasks[0].Integrated || w.Tasks[2].Integrated || !slices.Equal(w.FromCandidates, []string{"c"}) {
		t.Fatalf("swarm: tasks %+v, graded from %v", w.Tasks, w.FromCandidates)
	}
	// 1 set check + a + b + c (visible, two hidden): all but c's visible
	// and exact hidden check pass.
	if s.Quality != w.Quality || s.ChecksPassed != 4 || s.ChecksTotal != 6 {
		t.Errorf("quality: single %g (%d/%d), swarm %g (%d/%d)", s.Quality, s.ChecksPassed, s.ChecksTotal, w.Quality, w.ChecksPassed, w.ChecksTotal)
	}
	for i := range s.Checks {
		if s.Checks[i].GradingCheck != w.Checks[i].GradingCheck || s.Checks[i].Passed != w.Checks[i].Passed {
			t.Errorf("check %d: single %+v, swarm %+v", i, s.Checks[i], w.Checks[i])
		}
	}
	for i := range s.Tasks {
		if s.Tasks[i].ChecksPassed != w.Tasks[i].ChecksPassed {
			t.Errorf("task %s: %d checks passed for the single agent, %d for the swarm", s.Tasks[i].ID, s.Tasks[i].ChecksPassed, w.Tasks[i].ChecksPassed)
		}
	}
	if s.Accepted != 0 || w.Accepted != 2 || s.TimeTo == "last integration" {
		t.Errorf("accepted: single %d (time to %s), swarm %d", s.Accepted, s.TimeTo, w.Accepted)
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
