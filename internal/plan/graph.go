package plan

import "slices"

// graph is a plan's DAG over task indices. succ[i] lists the tasks that
// depend on i, pred[i] the tasks i depends on (deduplicated, in file order).
type graph struct {
	succ, pred [][]int32
}

func (p *Plan) graph() graph {
	n := len(p.Tasks)
	g := graph{succ: make([][]int32, n), pred: make([][]int32, n)}
	for i, t := range p.Tasks {
		for _, d := range t.Deps {
			j, ok := p.index[d.Task]
			if !ok || slices.Contains(g.pred[i], int32(j)) {
				continue
			}
			g.pred[i] = append(g.pred[i], int32(j))
			g.succ[j] = append(g.succ[j], int32(i))
		}
	}
	return g
}

// topo returns the tasks in a topological order (dependencies first; ties in
// file order), or ok=false when the graph has a cycle.
func (g graph) topo() (order []int32, ok bool) {
	n := len(g.pred)
	indeg := make([]int32, n)
	order = make([]int32, 0, n)
	for i := range n {
		indeg[i] = int32(len(g.pred[i]))
		if indeg[i] == 0 {
			order = append(order, int32(i))
		}
	}
	for head := 0; head < len(order); head++ {
		for _, s := range g.succ[order[head]] {
			if indeg[s]--; indeg[s] == 0 {
				order = append(order, s)
			}
		}
	}
	return order, len(order) == n
}

// cycles returns one cycle per strongly connected component that has one,
// each as task indices where every task depends on the next and the last
// depends on the first; each cycle starts at its lowest index.
func (p *Plan) cycles() [][]int {
	g := p.graph()
	n := len(p.Tasks)
	index := make([]int32, n)
	low := make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int32
	var counter int32
	type frame struct {
		v int32
		i int
	}
	var out [][]int
	for s := range n {
		if index[s] >= 0 {
			continue
		}
		index[s], low[s] = counter, counter
		counter++
		stack = append(stack, int32(s))
		onStack[s] = true
		calls := []frame{{v: int32(s)}}
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			if adj := g.pred[f.v]; f.i < len(adj) {
				w := adj[f.i]
				f.i++
				switch {
				case index[w] < 0:
					index[w], low[w] = counter, counter
					counter++
					stack = append(stack, w)
					onStack[w] = true
					calls = append(calls, frame{v: w})
				case onStack[w]:
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				parent := calls[len(calls)-1].v
				low[parent] = min(low[parent], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			var scc []int32
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			if c := cycleIn(g, scc); c != nil {
				out = append(out, c)
			}
		}
	}
	slices.SortFunc(out, func(a, b []int) int { return a[0] - b[0] })
	return out
}

// cycleIn returns a shortest cycle through the lowest index of a strongly
// connected component, or nil if the component is a single task without a
// self-dependency.
func cycleIn(g graph, scc []int32) []int {
	start := slices.Min(scc)
	if len(scc) == 1 && !slices.Contains(g.pred[start], start) {
		return nil
	}
	in := make(map[int32]bool, len(scc))
	for _, v := range scc {
		in[v] = true
	}
	// Breadth-first along "depends on" edges from start back to start.
	prev := map[int32]int32{}
	queue := []int32{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range g.pred[v] {
			if !in[w] {
				continue
			}
			if w == start {
				path := []int{int(start)}
				for x := v; x != start; x = prev[x] {
					path = append(path, int(x))
				}
				// path is start, v, ..., back toward start; reverse all but the first.
				slices.Reverse(path[1:])
				return path
			}
			if _, seen := prev[w]; !seen {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return nil
}
