package swarm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// actAgent plays the tasks of the merge-role tests: c adds Sum; d adds
// SumAll — a copy of Sum — unless its envelope carries the merge role's
// duplicate hint, when it calls Sum instead (and checks Sum is in the
// utility index it was given); n adds SumFrom, Sum's body with one token
// changed (a near duplicate), or with the hint naming Sum a SumFrom that
// calls it, as reuse-sumfrom also writes; a, b and c2 append to
// shared.txt; a split task appends its mark.
const actAgent = `set -e
case "$APIARY_TASK" in
c) mkdir -p util; printf 'package util\n\n// Sum adds the numbers.\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n' > util/sum.go ;;
d) mkdir -p util
   if grep -q '"type": *"duplicate"' .apiary/envelope.json; then
     grep -q '"Sum"' "$APIARY_UTILS" || { echo "the retry was not given the utility index" >&2; exit 3; }
     printf 'package util\n\n// SumAll adds the numbers.\nfunc SumAll(xs []int) int { return Sum(xs) }\n' > util/all.go
   else
     printf 'package util\n\nfunc SumAll(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n' > util/all.go
   fi ;;
n) mkdir -p util
   if grep -q '"type": *"duplicate"' .apiary/envelope.json; then
     grep -qF 'repeats Sum (util/sum.go:4)' .apiary/envelope.json || { echo "the hint does not name Sum" >&2; exit 3; }
     grep -q '"Sum"' "$APIARY_UTILS" || { echo "the retry was not given the utility index" >&2; exit 3; }
     printf 'package util\n\n// SumFrom adds the numbers to base.\nfunc SumFrom(base int, xs []int) int { return base + Sum(xs) }\n' > util/from.go
   else
     printf 'package util\n\nfunc SumFrom(base int, xs []int) int {\n\ttotal := base\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n' > util/from.go
   fi ;;
reuse-sumfrom) printf 'package util\n\n// SumFrom adds the numbers to base.\nfunc SumFrom(base int, xs []int) int { return base + Sum(xs) }\n' > util/from.go ;;
a|b|c2) echo "$APIARY_TASK" >> shared.txt ;;
split-*) echo split >> shared.txt ;;
esac
`

// runAct publishes plan with opts and one worker host and the merge role
// (holding policy over the run's), and waits for it.
func runAct(t *testing.T, plan string, opts layout.Options, policy ...layout.MergeOptions) (*swarmFixture, *layout.Record, *Report, string) {
	t.Helper()
	return runActOn(t, newSwarmFixture(t), plan, opts, policy...)
}

// runActOn is runAct on a fixture the caller prepared (its repository
// seeded with code the run starts from).
func runActOn(t *testing.T, f *swarmFixture, plan string, opts layout.Options, policy ...layout.MergeOptions) (*swarmFixture, *layout.Record, *Report, string) {
	t.Helper()
	agent := filepath.Join(t.TempDir(), "act.sh")
	if err := os.WriteFile(agent, []byte(actAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	plan = strings.ReplaceAll(plan, "AGENT", agent)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r, err := Publish(ctx, PublishConfig{Store: f.st, Repo: f.repo, PlanFile: "plan.yaml", PlanData: []byte(plan), Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	hctx, hcancel := context.WithCancel(ctx)
	defer func() { hcancel(); f.wg.Wait() }()
	mergeDir := filepath.Join(f.work, "merge")
	// A long TTL: a loaded machine must not lapse claims (and add attempts).
	f.host(t, hctx, HostConfig{Host: "h1", Run: r.Run, TTL: 20 * time.Second, Workers: []WorkerSpec{{ID: "w1", Profile: "sh", Slots: 2}}})
	mc := &MergeConfig{Dir: mergeDir, Git: git.Options{Env: append(os.Environ(), gittest.Env...)}}
	if len(policy) > 0 {
		mc.Policy = policy[0]
	}
	f.host(t, hctx, HostConfig{Host: "m", Run: r.Run, TTL: 20 * time.Second, Merge: mc})
	rep, err := WaitRun(ctx, f.st, r.Run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		var b strings.Builder
		rep.WriteText(&b)
		t.Fatalf("run did not succeed:\n%s", b.String())
	}
	return f, r, rep, mergeDir
}

// TestMergeRejectsDuplicate: with OnExact reject, the task that adds a
// copy of an existing function is rejected with a receipt naming the
// function to use, retried with that hint, and its retry — which calls
// the existing function — is integrated; the copy never reaches the
// branch or the utility index. The policy comes from the run's options,
// or from the merge host's own (a worker's flags, apiary.yaml) over a run
// that warns.
func TestMergeRejectsDuplicate(t *testing.T) {
	t.Parallel()
	plan := "version: 1\nagents:\n  sh: {kind: command, argv: [sh, AGENT]}\ntasks:\n" +
		"  - {id: c, objective: add Sum, agent: sh, write_scope: [util/sum.go]}\n" +
		"  - {id: d, objective: add SumAll, agent: sh, write_scope: [util/all.go], deps: [c]}\n"
	t.Run("run", func(t *testing.T) {
		t.Parallel()
		testMergeRejects(t, plan, layout.Options{Shards: 1, Merge: layout.MergeOptions{OnExact: layout.DupReject}})
	})
	t.Run("host", func(t *testing.T) {
		t.Parallel()
		testMergeRejects(t, plan, layout.Options{Shards: 1, Merge: layout.MergeOptions{OnExact: layout.DupWarn}}, layout.MergeOptions{OnExact: layout.DupReject})
	})
}

func testMergeRejects(t *testing.T, plan string, opts layout.Options, policy ...layout.MergeOptions) {
	f, r, rep, mergeDir := runAct(t, plan, opts, policy...)
	if tr := rep.Task("d"); tr.Attempts != 2 || tr.Integrated == "" {
		t.Errorf("d %+v; want rejected once, then integrated", tr)
	}
	b, err := os.ReadFile(filepath.Join(mergeDir, r.Run, "tasks", "d", "rejected-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := envelope.DecodeReceipt(b)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Status != envelope.StatusFailed || rc.Gate == nil || rc.Gate.Gate != "duplicate" || rc.Gate.File != "util/all.go" ||
		!strings.Contains(rc.Gate.Detail, "Sum (util/sum.go:4): func Sum(xs []int) int") {
		t.Errorf("the rejected attempt's receipt %+v gate %+v", rc, rc.Gate)
	}
	if got := gittest.Show(t, f.repo, "main", "util/all.go"); !strings.Contains(got, "return Sum(xs)") {
		t.Errorf("util/all.go on main = %q: the retry must call Sum", got)
	}
	if rep.Merge == nil || rep.Merge.DupRejected != 1 {
		t.Errorf("merge stats %+v", rep.Merge)
	}
	utils, err := ReadUtils(t.Context(), f.st, r.Run)
	if err != nil {
		t.Fatal(err)
	}
	var sum *UtilFunc
	for i, u := range utils {
		if u.Name == "Sum" {
			sum = &utils[i]
		}
	}
	if sum == nil || sum.Signature != "func Sum(xs []int) int" || sum.Doc != "Sum adds the numbers." {
		t.Errorf("utility index %+v; want Sum with its signature and doc line", utils)
	}
}

// TestMergeSplitsHotFile: when a file's writers reach HotTouches, the
// merge role adds the split task, and a task not yet started that writes
// the file waits for it; the hot file's count is every writer's.
func TestMergeSplitsHotFile(t *testing.T) {
	t.Parallel()
	plan := "version: 1\nagents:\n  sh: {kind: command, argv: [sh, AGENT]}\ntasks:\n" +
		"  - {id: a, objective: append a, agent: sh, write_scope: [shared.txt]}\n" +
		"  - {id: b, objective: append b, agent: sh, write_scope: [shared.txt], deps: [a]}\n" +
		"  - {id: c2, objective: append c2, agent: sh, write_scope: [shared.txt], deps: [b]}\n"
	f, _, rep, _ := runAct(t, plan, layout.Options{Shards: 1, Merge: layout.MergeOptions{HotTouches: 2}})
	split := rep.Task("split-shared")
	if split.Status != string(board.TaskDone) || split.Integrated == "" {
		t.Fatalf("the split task %+v", split)
	}
	// The split task ran after a and b and before c2.
	if got := gittest.Show(t, f.repo, "main", "shared.txt"); got != "start\na\nb\nsplit\nc2\n" {
		t.Errorf("shared.txt = %q; want the split before c2", got)
	}
	if len(rep.Hot) != 1 || !rep.Hot[0].Created || rep.Hot[0].Touches != 4 {
		t.Errorf("hot files %+v; want shared.txt created, touched by a, b, split and c2", rep.Hot)
	}
}

// TestMergeReuseAddsTask: with OnExact reuse, a duplicate is integrated
// and a task that makes it call the original is added and run.
func TestMergeReuseAddsTask(t *testing.T) {
	t.Parallel()
	plan := "version: 1\nagents:\n  sh: {kind: command, argv: [sh, AGENT]}\ntasks:\n" +
		"  - {id: c, objective: add Sum, agent: sh, write_scope: [util/sum.go]}\n" +
		"  - {id: d, objective: add SumAll, agent: sh, write_scope: [util/all.go], deps: [c]}\n"
	_, _, rep, _ := runAct(t, plan, layout.Options{Shards: 1, Merge: layout.MergeOptions{OnExact: layout.DupReuse}})
	if tr := rep.Task("d"); tr.Integrated == "" || rep.Merge == nil || rep.Merge.DupRejected != 0 || rep.Merge.Duplicates != 1 {
		t.Errorf("d %+v, merge %+v; want integrated with its duplicate, not rejected", tr, rep.Merge)
	}
	reuse := rep.Task("reuse-sumall")
	if reuse.Status != string(board.TaskDone) {
		t.Fatalf("the reuse task %+v; tasks %+v", reuse, rep.Tasks)
	}
	var found bool
	for _, tr := range rep.Tasks {
		found = found || tr.ID == "reuse-sumall"
	}
	if !found || rep.Totals.Tasks != 3 {
		t.Errorf("tasks %+v", rep.Tasks)
	}
}

// TestMergeOptionsFromPlan: a plan's merge: section sets what the
// publisher left unset; what the publisher sets wins; a bad policy is
// refused before anything is published.
func TestMergeOptionsFromPlan(t *testing.T) {
	t.Parallel()
	f := newSwarmFixture(t)
	plan := "version: 1\nmerge: {on_exact: reject, on_near: reuse, near_dup: 0.9, hot_touches: 5}\nagents:\n  sh: {kind: command, argv: [\"true\"]}\ntasks:\n  - {id: a, objective: a, agent: sh, write_scope: [a]}\n"
	r, err := Publish(t.Context(), PublishConfig{Store: f.st, Repo: f.repo, PlanFile: "plan.yaml", PlanData: []byte(plan), Options: layout.Options{Merge: layout.MergeOptions{HotTouches: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	m := r.Options.Merge
	if m.OnExact != layout.DupReject || m.OnNear != layout.DupReuse || m.NearDup != 0.9 || m.HotTouches != 2 {
		t.Errorf("merge options %+v", m)
	}
	if _, err := Publish(t.Context(), PublishConfig{Store: f.st, Repo: f.repo, PlanFile: "plan.yaml", PlanData: []byte(plan),
		Options: layout.Options{Merge: layout.MergeOptions{OnNear: "keep"}}}); err == nil || !strings.Contains(err.Error(), `duplicate policy "keep"`) {
		t.Errorf("a bad policy: %v", err)
	}
}

// TestSwarmPromptNamesUtilityIndex: every profile's prompt says where the
// run's utility index is when there is one, and says nothing of it when
// there is none.
func TestSwarmPromptNamesUtilityIndex(t *testing.T) {
	t.Parallel()
	e := &envelope.Envelope{Objective: "add SumAll", Inputs: envelope.Inputs{Workspace: "git:abc"}}
	j := &Job{Name: "d", Attempt: 2, Run: &layout.Record{Run: "r1"}, Worker: WorkerSpec{ID: "w1"}}
	if p := swarmPrompt(e, j, "/wt/.apiary/envelope.json", "/wt/.apiary/utils.json"); !strings.Contains(p, "Existing utility functions are listed in /wt/.apiary/utils.json") {
		t.Errorf("prompt without the index's path:\n%s", p)
	}
	if p := swarmPrompt(e, j, "/wt/.apiary/envelope.json", ""); strings.Contains(p, "utility") {
		t.Errorf("prompt names an index there is not:\n%s", p)
	}
}
