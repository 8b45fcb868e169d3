package swarm

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/review"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// The duplicate-rate task set: every task adds a feature that needs a
// small helper of its family (clamp, gcd, sum of squares, reverse), so the
// tasks of one family invite the same function written again. Its agent
// behaves as the merge role's design assumes agents do, no better: it
// calls a helper it is told of — by a duplicate hint on a retry, or, when
// it reads the utility index (USE_INDEX=1), by finding one of its family
// there — and otherwise writes its own copy beside its feature.
const dupAgent = `set -e
name=$APIARY_TASK
fam=${name%-*}; n=${name#*-}
F=$(printf %s "$fam" | sed 's/^./\U&/')
use=""
if grep -q '"type": *"duplicate"' .apiary/envelope.json; then
  use=$(sed -n 's/.* repeats \([A-Za-z0-9]*\) (.*/\1/p' .apiary/envelope.json | head -n 1)
elif [ "$USE_INDEX" = 1 ] && [ -n "$APIARY_UTILS" ] && [ -f "$APIARY_UTILS" ]; then
  use=$(grep -o "\"name\": *\"$F[A-Za-z0-9]*\"" "$APIARY_UTILS" | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/')
fi
mkdir -p util feat
if [ -z "$use" ]; then
  use="${F}T$n"
  sed "s/NAME/$use/g" "$TPL/$fam.helper" > "util/${fam}_t$n.go"
fi
sed -e "s/NAME/$use/g" -e "s/NUM/$n/g" "$TPL/$fam.feat" > "feat/f$n.go"
`

// dupFamilies are the helpers' bodies and the features that call them.
var dupFamilies = map[string][2]string{
	"clamp": {"package util\n\n// NAME limits v to [lo, hi].\nfunc NAME(v, lo, hi int) int {\n\tif v < lo {\n\t\treturn lo\n\t}\n\tif v > hi {\n\t\treturn hi\n\t}\n\treturn v\n}\n",
		"package feat\n\nimport \"dup.example/util\"\n\n// FNUM is a feature.\nfunc FNUM(v int) int { return util.NAME(v, 0, NUM) }\n"},
	"gcd": {"package util\n\n// NAME is the greatest common divisor of a and b.\nfunc NAME(a, b int) int {\n\tfor b != 0 {\n\t\ta, b = b, a%b\n\t}\n\tif a < 0 {\n\t\treturn -a\n\t}\n\treturn a\n}\n",
		"package feat\n\nimport \"dup.example/util\"\n\n// FNUM is a feature.\nfunc FNUM(v int) int { return util.NAME(v, NUM) }\n"},
	"sumsq": {"package util\n\n// NAME sums the squares of xs.\nfunc NAME(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x * x\n\t}\n\treturn total\n}\n",
		"package feat\n\nimport \"dup.example/util\"\n\n// FNUM is a feature.\nfunc FNUM(v int) int { return util.NAME([]int{v, NUM}) }\n"},
	"rev": {"package util\n\n// NAME reverses s by runes.\nfunc NAME(s string) string {\n\tr := []rune(s)\n\tfor i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {\n\t\tr[i], r[j] = r[j], r[i]\n\t}\n\treturn string(r)\n}\n",
		"package feat\n\nimport \"dup.example/util\"\n\n// FNUM is a feature.\nfunc FNUM(s string) string { return util.NAME(s) + \"NUM\" }\n"},
}

// dupArm is one way of running the task set.
type dupArm struct {
	name    string
	index   bool             // agents read the utility index
	onExact layout.DupPolicy // the merge role's policy for exact duplicates
}

// dupResult is what one arm's run left: counted on the integrated tree,
// not taken from the merge role's own account.
type dupResult struct {
	tasks, helpers, duplicates, attempts int
	wall                                 time.Duration
}

func (r dupResult) rate() float64 { return float64(r.duplicates) / float64(r.tasks) }

// runDupArm runs tasks tasks of families families (round-robin) with one
// worker of slots slots and the merge role, and counts the duplicates of
// the integrated tree.
func runDupArm(t testing.TB, arm dupArm, tasks, families, slots int) dupResult {
	t.Helper()
	fams := []string{"clamp", "gcd", "sumsq", "rev"}[:families]
	files := map[string]string{"go.mod": "module dup.example\n\ngo 1.22\n", "util/doc.go": "// Package util holds shared helpers.\npackage util\n"}
	repo := gittest.NewRepo(t, files)
	dir := t.TempDir()
	tpl := filepath.Join(dir, "tpl")
	for _, f := range fams {
		gittest.WriteFiles(t, tpl, map[string]string{f + ".helper": dupFamilies[f][0], f + ".feat": dupFamilies[f][1]})
	}
	gittest.WriteFiles(t, dir, map[string]string{"agent.sh": dupAgent})
	useIndex := "0"
	if arm.index {
		useIndex = "1"
	}
	var plan strings.Builder
	fmt.Fprintf(&plan, "version: 1\nagents:\n  sh: {kind: command, argv: [sh, %s], env: {TPL: %q, USE_INDEX: %q}}\ntasks:\n", filepath.Join(dir, "agent.sh"), tpl, useIndex)
	for i := range tasks {
		fam := fams[i%families]
		fmt.Fprintf(&plan, "  - {id: %s-%02d, objective: add feature %d, agent: sh, write_scope: [util/%s_t%02d.go, feat/f%02d.go]}\n", fam, i, i, fam, i, i)
	}
	dsn := "local:" + filepath.Join(dir, "state.db")
	st, err := connect.Open(t.Context(), dsn, connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	r, err := Publish(ctx, PublishConfig{Store: st, Repo: repo, PlanFile: "plan.yaml", PlanData: []byte(plan.String()),
		Options: layout.Options{Shards: 1, MaxAttempts: 3, Merge: layout.MergeOptions{OnExact: arm.onExact}}})
	if err != nil {
		t.Fatal(err)
	}
	f := &swarmFixture{repo: repo, dsn: dsn, work: filepath.Join(dir, "work"), st: st}
	hctx, hcancel := context.WithCancel(ctx)
	defer func() { hcancel(); f.wg.Wait() }()
	f.host(t, hctx, HostConfig{Host: "h1", Run: r.Run, TTL: 20 * time.Second, Workers: []WorkerSpec{{ID: "w1", Profile: "sh", Slots: slots}}})
	f.host(t, hctx, HostConfig{Host: "m", Run: r.Run, TTL: 20 * time.Second,
		Merge: &MergeConfig{Dir: filepath.Join(dir, "merge"), Git: git.Options{Env: append(os.Environ(), gittest.Env...)}}})
	rep, err := WaitRun(ctx, st, r.Run, nil)
	if err != nil {
		if rep, lerr := LoadReport(context.WithoutCancel(ctx), st, r.Run); lerr == nil {
			var b strings.Builder
			rep.WriteText(&b)
			t.Logf("%s: the board's report:\n%s", arm.name, b.String())
		}
		t.Fatalf("%s: %v", arm.name, err)
	}
	res := dupResult{tasks: tasks, wall: time.Since(start)}
	for _, tr := range rep.Tasks {
		res.attempts += tr.Attempts
	}
	if !rep.OK() {
		var b strings.Builder
		rep.WriteText(&b)
		t.Fatalf("%s: run did not succeed:\n%s", arm.name, b.String())
	}
	// Count on the branch: every exported util function, grouped by the
	// body's hash; each beyond the first of a group is a duplicate.
	byHash := map[string]int{}
	for _, p := range strings.Fields(gittest.Git(t, repo.Dir(), "ls-tree", "-r", "--name-only", "main", "util/")) {
		for _, fn := range review.ExtractFuncs(p, []byte(gittest.Show(t, repo, "main", p))) {
			byHash[fn.Hash]++
			res.helpers++
		}
	}
	for _, n := range byHash {
		res.duplicates += n - 1
	}
	if len(byHash) != families {
		t.Errorf("%s: %d distinct helper bodies on the branch, want %d (one per family)", arm.name, len(byHash), families)
	}
	return res
}

// TestDuplicateRate: on the task set that invites duplicates, agents that
// are told nothing write one copy per task after the first of each family
// (exactly tasks − families duplicates, whatever the timing); reading the
// utility index can only lower that; and with exact duplicates rejected,
// none reaches the branch — each rejected task is retried with the hint and
// calls the existing helper.
func TestDuplicateRate(t *testing.T) {
	t.Parallel()
	const tasks, families = 6, 2
	results := map[string]dupResult{}
	for _, arm := range dupArms() {
		r := runDupArm(t, arm, tasks, families, 2)
		results[arm.name] = r
		t.Logf("%s: %d duplicates of %d helpers, %d attempts", arm.name, r.duplicates, r.helpers, r.attempts)
	}
	if got := results["none"].duplicates; got != tasks-families {
		t.Errorf("no index, warn: %d duplicates, want %d", got, tasks-families)
	}
	if got := results["index"].duplicates; got > results["none"].duplicates {
		t.Errorf("with the index: %d duplicates, more than the %d without", got, results["none"].duplicates)
	}
	if r := results["index+reject"]; r.duplicates != 0 || r.attempts < tasks {
		t.Errorf("index and rejection: %d duplicates on the branch (attempts %d)", r.duplicates, r.attempts)
	}
}

func dupArms() []dupArm {
	return []dupArm{
		{name: "none", onExact: layout.DupWarn},
		{name: "index", index: true, onExact: layout.DupWarn},
		{name: "index+reject", index: true, onExact: layout.DupReject},
	}
}

var dupReps = flag.Int("dup.reps", 3, "BenchmarkDuplicateRate: runs of each arm")

// BenchmarkDuplicateRate measures the duplicate rate (duplicates on the
// branch / tasks) of 24 tasks in 4 families on 4 slots, without the index,
// with it, and with it and exact duplicates rejected, -dup.reps runs each.
// It reports per arm the mean rate, the attempts per task and the wall
// time; b.N is ignored beyond the first iteration.
func BenchmarkDuplicateRate(b *testing.B) {
	const tasks, families, slots = 24, 4, 4
	for _, arm := range dupArms() {
		b.Run(arm.name, func(b *testing.B) {
			var rates []float64
			var attempts, wall float64
			for range *dupReps {
				r := runDupArm(b, arm, tasks, families, slots)
				rates = append(rates, r.rate())
				attempts += float64(r.attempts) / float64(tasks)
				wall += r.wall.Seconds()
				b.Logf("%s: %d duplicates of %d helpers, %d tasks, %d attempts, %.1fs", arm.name, r.duplicates, r.helpers, tasks, r.attempts, r.wall.Seconds())
			}
			n := float64(len(rates))
			mean := 0.0
			for _, x := range rates {
				mean += x / n
			}
			b.ReportMetric(mean, "dup-rate")
			b.ReportMetric(slices.Min(rates), "dup-rate-min")
			b.ReportMetric(slices.Max(rates), "dup-rate-max")
			b.ReportMetric(attempts/n, "attempts/task")
			b.ReportMetric(wall/n, "wall-s")
			for range b.N {
			}
		})
	}
}
