package plan

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
)

// issueDAG: roots a and e; b and c after a; d after b and c; f after e and
// d. Its levels are {a, e}, {b, c}, {d}, {f}, so the widest level has two
// tasks, but b, c and e are mutually independent.
const issueDAG = `version: 1
tasks:
  - {id: a, objective: x, agent: claude, write_scope: [a/], estimate_s: 10}
  - {id: e, objective: x, agent: claude, write_scope: [e/], estimate_s: 10}
  - {id: b, objective: x, agent: claude, write_scope: [b/], estimate_s: 10, deps: [a]}
  - {id: c, objective: x, agent: claude, write_scope: [c/], estimate_s: 10, deps: [a]}
  - {id: d, objective: x, agent: claude, write_scope: [d/], estimate_s: 10, deps: [b, c]}
  - {id: f, objective: x, agent: claude, write_scope: [f/], estimate_s: 10, deps: [e, d]}
`

func TestWidthIsTheMaximumAntichain(t *testing.T) {
	t.Parallel()
	a := mustParse(t, issueDAG).Analyze(0)
	if a.Width != 3 || !a.WidthExact || !slices.Equal(a.Antichain, []string{"e", "b", "c"}) {
		t.Errorf("width %d (exact %v) antichain %v; want 3, {e b c} in file order", a.Width, a.WidthExact, a.Antichain)
	}
	if a.LevelWidth != 2 || a.Levels != 4 {
		t.Errorf("level width %d over %d levels; want 2 over 4", a.LevelWidth, a.Levels)
	}
}

// TestWidthAboveTheExactLimit: a plan too large for the bit matrix
// reports its widest level, flagged as not exact.
func TestWidthAboveTheExactLimit(t *testing.T) {
	t.Parallel()
	p := randomPlan(rand.New(rand.NewPCG(9, 10)), MaxExactWidthTasks+1, 3)
	a := p.Analyze(16)
	if a.WidthExact || a.Width != a.LevelWidth || len(a.Antichain) != a.Width {
		t.Fatalf("width %d (exact %v), level width %d, antichain of %d", a.Width, a.WidthExact, a.LevelWidth, len(a.Antichain))
	}
	// The antichain is one level: no member depends on another directly.
	in := map[string]bool{}
	for _, id := range a.Antichain {
		in[id] = true
	}
	for _, id := range a.Antichain {
		for _, d := range p.Task(id).Deps {
			if in[d.Task] {
				t.Fatalf("%s depends on %s, both in the reported level", id, d.Task)
			}
		}
	}
}

// reachMatrix computes reachability by Floyd–Warshall on a boolean matrix,
// independently of closure: m[i]>>j&1 when task j depends, directly or
// not, on task i. Only for n <= 64.
func reachMatrix(p *Plan) []uint64 {
	n := len(p.Tasks)
	m := make([]uint64, n)
	for i, t := range p.Tasks {
		for _, d := range t.Deps {
			m[p.index[d.Task]] |= 1 << i
		}
	}
	for k := range n {
		for i := range n {
			if m[i]>>k&1 != 0 {
				m[i] |= m[k]
			}
		}
	}
	return m
}

// bruteWidth is the largest antichain by trying every subset, largest
// first. Only for small n.
func bruteWidth(m []uint64) int {
	n := len(m)
	best := 0
	for s := uint64(1); s < 1<<n; s++ {
		c := bits.OnesCount64(s)
		if c <= best {
			continue
		}
		ok := true
		for x := s; x != 0 && ok; x &= x - 1 {
			ok = m[bits.TrailingZeros64(x)]&s == 0
		}
		if ok {
			best = c
		}
	}
	return best
}

// TestAntichainAgainstBruteForce: on random small DAGs the width is the
// brute-force maximum, the antichain is one, and the chains are chains
// that cover every task once.
func TestAntichainAgainstBruteForce(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	for iter := range 400 {
		n := 1 + r.IntN(16)
		p := randomPlan(r, n, 1+r.IntN(4))
		m := reachMatrix(p)
		g := p.graph()
		order, _ := g.topo()
		anti, chains := antichain(g, order)
		name := fmt.Sprintf("iter %d (n=%d)", iter, n)
		if want := bruteWidth(m); len(anti) != want || len(chains) != want {
			t.Fatalf("%s: antichain %d, chains %d, brute force %d", name, len(anti), len(chains), want)
		}
		var set uint64
		for _, v := range anti {
			set |= 1 << v
		}
		for _, v := range anti {
			if m[v]&set != 0 {
				t.Fatalf("%s: antichain %v: %d reaches a member", name, anti, v)
			}
		}
		var covered uint64
		for _, c := range chains {
			for i, v := range c {
				if covered>>v&1 != 0 {
					t.Fatalf("%s: task %d in two chains", name, v)
				}
				covered |= 1 << v
				if i > 0 && m[c[i-1]]>>v&1 == 0 {
					t.Fatalf("%s: chain %v: %d does not depend on %d", name, c, v, c[i-1])
				}
			}
		}
		if covered != 1<<n-1 {
			t.Fatalf("%s: chains %v do not cover every task", name, chains)
		}
		if a := p.Analyze(2); a.Width != len(anti) || a.LevelWidth > a.Width || a.PeakParallelism > a.Width {
			t.Fatalf("%s: width %d, level width %d, peak %d", name, a.Width, a.LevelWidth, a.PeakParallelism)
		}
	}
}

// TestAntichain10k checks the answer on a 10,000-task DAG by its
// certificate: an antichain and a chain cover of the same size prove each
// other optimal. Comparability is checked by searches on the plan's own
// dependencies, not on the bit matrix.
func TestAntichain10k(t *testing.T) {
	t.Parallel()
	p := randomPlan(rand.New(rand.NewPCG(7, 8)), 10000, 3)
	g := p.graph()
	order, _ := g.topo()
	anti, chains := antichain(g, order)
	if len(anti) != len(chains) {
		t.Fatalf("antichain of %d, %d chains", len(anti), len(chains))
	}
	n := len(p.Tasks)
	pos := make([]int32, n)
	for i, v := range order {
		pos[v] = int32(i)
	}
	// reaches reports whether v depends on u, by a depth-first search
	// over dependents that never passes v's topological position.
	stamp, tag := make([]int32, n), int32(0)
	reaches := func(u, v int32) bool {
		tag++
		stack := []int32{u}
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, s := range g.succ[x] {
				if s == v {
					return true
				}
				if stamp[s] != tag && pos[s] < pos[v] {
					stamp[s] = tag
					stack = append(stack, s)
				}
			}
		}
		return false
	}
	seen := make([]bool, n)
	for _, c := range chains {
		for i, v := range c {
			if seen[v] {
				t.Fatalf("task %d in two chains", v)
			}
			seen[v] = true
			if i > 0 && !reaches(c[i-1], v) {
				t.Fatalf("chain: %d does not depend on %d", v, c[i-1])
			}
		}
	}
	if slices.Contains(seen, false) {
		t.Fatal("the chains do not cover every task")
	}
	// No member of the antichain reaches another: one search from each.
	member := make([]bool, n)
	for _, v := range anti {
		member[v] = true
	}
	for _, u := range anti {
		tag++
		stack := []int32{u}
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, s := range g.succ[x] {
				if member[s] {
					t.Fatalf("antichain members %d and %d are dependent", u, s)
				}
				if stamp[s] != tag {
					stamp[s] = tag
					stack = append(stack, s)
				}
			}
		}
	}
	a := p.Analyze(16)
	if a.Width != len(anti) || !a.WidthExact || a.LevelWidth > a.Width {
		t.Fatalf("analysis: width %d (exact %v), level width %d; antichain %d", a.Width, a.WidthExact, a.LevelWidth, len(anti))
	}
	t.Logf("10,000 tasks: width %d, level width %d, %d levels", a.Width, a.LevelWidth, a.Levels)
}

// shapedPlan builds n tasks in layers of the given size, each task
// depending on deps random tasks of the layer before (a chain when size is
// 1, no dependencies when size is n).
func shapedPlan(r *rand.Rand, n, size, deps int) *Plan {
	p := &Plan{File: "shaped", MaxParallel: 4, index: map[string]int{}}
	for i := range n {
		t := &Task{ID: fmt.Sprintf("t%d", i), Agent: "claude", EstimateS: 1 + float64(r.IntN(100))}
		if lo := (i/size - 1) * size; lo >= 0 {
			for range deps {
				j := lo + r.IntN(size)
				if !slices.ContainsFunc(t.Deps, func(d envelope.Dep) bool { return d.Task == p.Tasks[j].ID }) {
					t.Deps = append(t.Deps, envelope.Dep{Task: p.Tasks[j].ID, Kind: envelope.DepData})
				}
			}
		}
		p.index[t.ID] = i
		p.Tasks = append(p.Tasks, t)
	}
	return p
}

// BenchmarkWidth10k: the maximum antichain alone (reachability bit
// matrix, Hopcroft–Karp, König) of 10,000-task DAGs: the random DAG of
// the other tests, 100 layers of 100, a chain, and no dependencies.
func BenchmarkWidth10k(b *testing.B) {
	for _, c := range []struct {
		name string
		p    *Plan
	}{
		{"random", randomPlan(rand.New(rand.NewPCG(5, 6)), 10000, 3)},
		{"layers", shapedPlan(rand.New(rand.NewPCG(5, 6)), 10000, 100, 3)},
		{"chain", shapedPlan(rand.New(rand.NewPCG(5, 6)), 10000, 1, 1)},
		{"independent", shapedPlan(rand.New(rand.NewPCG(5, 6)), 10000, 10000, 0)},
	} {
		b.Run(c.name, func(b *testing.B) {
			g := c.p.graph()
			order, _ := g.topo()
			b.ReportAllocs()
			var w int
			for b.Loop() {
				anti, _ := antichain(g, order)
				w = len(anti)
			}
			b.ReportMetric(float64(w), "width")
		})
	}
}
