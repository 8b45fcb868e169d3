package plan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
)

const eps = 1e-6

// randomPlan builds a random DAG of n tasks, each depending on up to maxDeps
// earlier ones, then shuffles the file order (so file order is not a
// topological order).
func randomPlan(r *rand.Rand, n, maxDeps int) *Plan {
	tasks := make([]*Task, n)
	for i := range n {
		t := &Task{ID: fmt.Sprintf("t%d", i), Agent: "claude", EstimateS: float64(r.IntN(200)) / 2}
		if r.IntN(10) == 0 {
			t.EstimateS = 0
		}
		if i > 0 {
			for range r.IntN(maxDeps + 1) {
				// Mostly recent tasks, sometimes far back.
				j := i - 1 - r.IntN(min(i, 50))
				if r.IntN(8) == 0 {
					j = r.IntN(i)
				}
				if !slices.ContainsFunc(t.Deps, func(d envelope.Dep) bool { return d.Task == tasks[j].ID }) {
					t.Deps = append(t.Deps, envelope.Dep{Task: tasks[j].ID, Kind: envelope.DepData})
				}
			}
		}
		tasks[i] = t
	}
	r.Shuffle(n, func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	p := &Plan{File: "random", MaxParallel: 4, Tasks: tasks, index: map[string]int{}}
	for i, t := range tasks {
		p.index[t.ID] = i
	}
	return p
}

// TestScheduleProperties checks, on random DAGs, the list schedule against
// the lower bounds max(critical path, work/P) and Graham's upper bound
// work/P + critical path, and that the schedule and critical path are
// feasible.
func TestScheduleProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		n := 1 + r.IntN(60)
		p := randomPlan(r, n, 1+r.IntN(4))
		workers := 1 + r.IntN(8)
		a := p.Analyze(workers)
		name := fmt.Sprintf("iter %d (n=%d, P=%d)", iter, n, workers)
		P := float64(workers)
		if a.MakespanS < a.CriticalPathS-eps || a.MakespanS < a.WorkS/P-eps {
			t.Fatalf("%s: makespan %v below max(cp %v, work/P %v)", name, a.MakespanS, a.CriticalPathS, a.WorkS/P)
		}
		if a.MakespanS > a.WorkS/P+a.CriticalPathS+eps {
			t.Fatalf("%s: makespan %v above Graham's bound %v", name, a.MakespanS, a.WorkS/P+a.CriticalPathS)
		}
		if a.Speedup > a.SpanBound+eps {
			t.Fatalf("%s: speedup %v above the span bound %v", name, a.Speedup, a.SpanBound)
		}
		checkSchedule(t, name, p, a)
		checkCriticalPath(t, name, p, a)
		if a.Width < 1 || a.Width > n || a.Levels < 1 || a.PeakParallelism > n {
			t.Fatalf("%s: width %d levels %d peak %d", name, a.Width, a.Levels, a.PeakParallelism)
		}
		// With a worker per task the list schedule is the as-soon-as-possible
		// schedule, whose length is the critical path.
		if all := p.Analyze(n); all.MakespanS > all.CriticalPathS+eps {
			t.Fatalf("%s: unlimited workers give makespan %v > cp %v", name, all.MakespanS, all.CriticalPathS)
		}
	}
}

func checkSchedule(t *testing.T, name string, p *Plan, a *Analysis) {
	t.Helper()
	if len(a.Schedule) != len(p.Tasks) {
		t.Fatalf("%s: %d slots for %d tasks", name, len(a.Schedule), len(p.Tasks))
	}
	slot := map[string]Slot{}
	for _, s := range a.Schedule {
		if _, dup := slot[s.ID]; dup {
			t.Fatalf("%s: %s scheduled twice", name, s.ID)
		}
		slot[s.ID] = s
		if s.Worker < 0 || s.Worker >= a.Workers || s.FinishS-s.StartS != p.Task(s.ID).EstimateS {
			t.Fatalf("%s: bad slot %+v", name, s)
		}
	}
	for _, tk := range p.Tasks {
		for _, d := range tk.Deps {
			if slot[tk.ID].StartS < slot[d.Task].FinishS-eps {
				t.Fatalf("%s: %s starts at %v before its dependency %s finishes at %v", name, tk.ID, slot[tk.ID].StartS, d.Task, slot[d.Task].FinishS)
			}
		}
	}
	// No worker runs two tasks at once (zero-length tasks occupy no time).
	byWorker := map[int][]Slot{}
	for _, s := range a.Schedule {
		if s.FinishS > s.StartS {
			byWorker[s.Worker] = append(byWorker[s.Worker], s)
		}
	}
	for w, ss := range byWorker {
		sort.Slice(ss, func(i, j int) bool { return ss[i].StartS < ss[j].StartS })
		for i := 1; i < len(ss); i++ {
			if ss[i].StartS < ss[i-1].FinishS-eps {
				t.Fatalf("%s: worker %d overlaps %+v and %+v", name, w, ss[i-1], ss[i])
			}
		}
	}
}

func checkCriticalPath(t *testing.T, name string, p *Plan, a *Analysis) {
	t.Helper()
	sum := 0.0
	for i, id := range a.CriticalPath {
		sum += p.Task(id).EstimateS
		if i > 0 && !slices.ContainsFunc(p.Task(id).Deps, func(d envelope.Dep) bool { return d.Task == a.CriticalPath[i-1] }) {
			t.Fatalf("%s: critical path %v: %s does not depend on %s", name, a.CriticalPath, id, a.CriticalPath[i-1])
		}
	}
	if sum != a.CriticalPathS {
		t.Fatalf("%s: critical path sums to %v, reported %v", name, sum, a.CriticalPathS)
	}
	longest := 0.0
	for _, bl := range p.BottomLevels() {
		longest = max(longest, bl)
	}
	if longest != a.CriticalPathS {
		t.Fatalf("%s: longest bottom level %v ≠ critical path %v", name, longest, a.CriticalPathS)
	}
}

// TestLargeDAG parses and validates a 2,000-task plan file and analyses a
// 10,000-task DAG (BenchmarkPlanAnalyze10k times parsing 10,000).
func TestLargeDAG(t *testing.T) {
	t.Parallel()
	src := randomYAML(rand.New(rand.NewPCG(3, 4)), 2000)
	p, err := Parse("big.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	if a := p.Analyze(16); a.Tasks != 2000 || len(a.Schedule) != 2000 || a.MakespanS < a.CriticalPathS {
		t.Fatalf("analysis %+v", a)
	}
	big := randomPlan(rand.New(rand.NewPCG(7, 8)), 10000, 3)
	a := big.Analyze(16)
	if a.Tasks != 10000 || len(a.Schedule) != 10000 || a.MakespanS < a.CriticalPathS || a.MakespanS > a.WorkS/16+a.CriticalPathS {
		t.Fatalf("analysis of 10,000 tasks out of bounds: makespan %v, cp %v, work %v", a.MakespanS, a.CriticalPathS, a.WorkS)
	}
	checkSchedule(t, "10k", big, a)
}

// randomYAML renders a random plan of n tasks as a plan file.
func randomYAML(r *rand.Rand, n int) []byte {
	p := randomPlan(r, n, 3)
	var b strings.Builder
	b.WriteString("version: 1\nmax_parallel: 16\nagents:\n  sh: {kind: command, argv: [\"true\"]}\ntasks:\n")
	for _, t := range p.Tasks {
		deps := make([]string, len(t.Deps))
		for i, d := range t.Deps {
			deps[i] = d.Task
		}
		fmt.Fprintf(&b, "  - {id: %s, objective: do %s, agent: sh, write_scope: [src/%s/], estimate_s: %v, deps: [%s]}\n",
			t.ID, t.ID, t.ID, t.EstimateS, strings.Join(deps, ", "))
	}
	return []byte(b.String())
}

// BenchmarkAnalyze10k: analysis alone (critical path, levels, profile, list
// schedule) of a 10,000-task random DAG on 16 workers.
func BenchmarkAnalyze10k(b *testing.B) {
	p := randomPlan(rand.New(rand.NewPCG(5, 6)), 10000, 3)
	b.ReportAllocs()
	for b.Loop() {
		p.Analyze(16)
	}
}

// BenchmarkPlanAnalyze10k: what `apiary plan analyze` does with a
// 10,000-task plan file: parse, schema-validate, check, analyse.
func BenchmarkPlanAnalyze10k(b *testing.B) {
	src := randomYAML(rand.New(rand.NewPCG(5, 6)), 10000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := Parse("big.yaml", src)
		if err != nil {
			b.Fatal(err)
		}
		p.Analyze(16)
	}
}

// TestReplay: replaying the estimates gives Analyze's makespan; scaling
// every duration scales the makespan (the priorities stay the same, so
// the order of events does).
func TestReplay(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(13, 14))
	for iter := range 100 {
		p := randomPlan(r, 1+r.IntN(80), 1+r.IntN(4))
		workers := 1 + r.IntN(6)
		dur := make([]float64, len(p.Tasks))
		for i, tk := range p.Tasks {
			dur[i] = tk.EstimateS
		}
		rp := p.Replay(workers)
		a := p.Analyze(workers)
		if got := rp.Makespan(dur); got != a.MakespanS {
			t.Fatalf("iter %d: replay of the estimates %v, analysis %v", iter, got, a.MakespanS)
		}
		for i := range dur {
			dur[i] *= 2
		}
		if got := rp.Makespan(dur); math.Abs(got-2*a.MakespanS) > eps {
			t.Fatalf("iter %d: doubled durations give %v, want %v", iter, got, 2*a.MakespanS)
		}
	}
	// One worker runs everything in turn, whatever the durations.
	p := randomPlan(r, 50, 3)
	dur := make([]float64, 50)
	sum := 0.0
	for i := range dur {
		dur[i] = r.Float64() * 100
		sum += dur[i]
	}
	if got := p.Replay(1).Makespan(dur); math.Abs(got-sum) > eps {
		t.Fatalf("one worker: %v, want the sum %v", got, sum)
	}
}

// BenchmarkReplay10k: one replay of the list schedule of a 10,000-task
// random DAG on 16 workers with other durations, what each Monte Carlo
// trial of plan analyze --p90-ratio does twice.
func BenchmarkReplay10k(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	p := randomPlan(r, 10000, 3)
	dur := make([]float64, len(p.Tasks))
	for i, t := range p.Tasks {
		dur[i] = t.EstimateS * (0.5 + r.Float64())
	}
	rp := p.Replay(16)
	b.ReportAllocs()
	for b.Loop() {
		rp.Makespan(dur)
	}
}
