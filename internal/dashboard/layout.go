package dashboard

import (
	"math"
	"slices"
	"sort"
)

// Graph is a run's DAG laid out left to right: a task's layer is the
// length of the longest dependency chain leading to it, so every arrow
// points right. A layer taller than the graph's row limit is wrapped into
// several columns, so many independent tasks make a block, not one long
// clipped column.
type Graph struct {
	Width  int         `json:"width"`
	Height int         `json:"height"`
	Nodes  []GraphNode `json:"nodes"`
	Edges  []GraphEdge `json:"edges"`
}

// GraphNode is a task's box; X and Y are its top-left corner.
type GraphNode struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Level    int    `json:"level"`
	X        int    `json:"x"`
	Y        int    `json:"y"`
	W        int    `json:"w"`
	H        int    `json:"h"`
	Critical bool   `json:"critical"` // on the predicted critical path
	Achieved bool   `json:"achieved"` // on the achieved critical path
}

// GraphEdge is an arrow between two nodes.
type GraphEdge struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Kind     string `json:"kind"`
	Critical bool   `json:"critical"` // on the predicted critical path
	Achieved bool   `json:"achieved"` // on the achieved critical path
}

// Layout geometry, in CSS pixels.
const (
	nodeW   = 160
	nodeH   = 44
	gapX    = 56
	gapY    = 14
	marginX = 8
	marginY = 8
)

// layoutGraph lays out r's tasks and edges. Edges naming unknown tasks are
// dropped; a cycle (which a valid plan never has) is broken by placing its
// tasks after everything else.
func layoutGraph(r *Run) *Graph {
	index := make(map[string]int, len(r.Tasks))
	for i, t := range r.Tasks {
		if _, dup := index[t.ID]; !dup {
			index[t.ID] = i
		}
	}
	n := len(r.Tasks)
	preds := make([][]int, n)
	succs := make([][]int, n)
	var edges []GraphEdge
	seen := map[[2]int]bool{}
	crit, ach := pairs(r.Predicted.Tasks), pairs(r.Achieved.Tasks)
	for _, e := range r.Edges {
		f, okf := index[e.From]
		to, okt := index[e.To]
		if !okf || !okt || f == to || seen[[2]int{f, to}] {
			continue
		}
		seen[[2]int{f, to}] = true
		preds[to] = append(preds[to], f)
		succs[f] = append(succs[f], to)
		edges = append(edges, GraphEdge{From: e.From, To: e.To, Kind: e.Kind, Critical: crit[[2]string{e.From, e.To}], Achieved: ach[[2]string{e.From, e.To}]})
	}
	// Longest-path levels in topological order (Kahn).
	level := make([]int, n)
	indeg := make([]int, n)
	for i := range preds {
		indeg[i] = len(preds[i])
	}
	var queue []int
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	done := make([]bool, n)
	maxLevel := 0
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		done[v] = true
		maxLevel = max(maxLevel, level[v])
		for _, s := range succs[v] {
			level[s] = max(level[s], level[v]+1)
			if indeg[s]--; indeg[s] == 0 {
				queue = append(queue, s)
			}
		}
	}
	for i := range n {
		if !done[i] { // on a cycle
			level[i] = maxLevel + 1
		}
	}
	// Columns, first in task order, then by the mean row of each task's
	// predecessors (a barycenter pass), which untangles most crossings.
	cols := map[int][]int{}
	levels := []int{}
	for i := range n {
		if _, ok := cols[level[i]]; !ok {
			levels = append(levels, level[i])
		}
		cols[level[i]] = append(cols[level[i]], i)
	}
	sort.Ints(levels)
	row := make([]float64, n)
	for _, l := range levels {
		col := cols[l]
		bary := make(map[int]float64, len(col))
		for k, v := range col {
			bary[v] = float64(k)
			if len(preds[v]) > 0 {
				sum := 0.0
				for _, p := range preds[v] {
					sum += row[p]
				}
				bary[v] = sum / float64(len(preds[v]))
			}
		}
		sort.SliceStable(col, func(a, b int) bool { return bary[col[a]] < bary[col[b]] })
		for k, v := range col {
			row[v] = float64(k)
		}
	}
	onPred, onAch := set(r.Predicted.Tasks), set(r.Achieved.Tasks)
	g := &Graph{Nodes: make([]GraphNode, 0, n), Edges: edges}
	if g.Edges == nil {
		g.Edges = []GraphEdge{}
	}
	// Wrap layers taller than maxRows into columns of maxRows.
	maxRows := rowLimit(n, len(levels))
	rows, ci := 0, 0
	for _, l := range levels {
		col := cols[l]
		for k, v := range col {
			t := r.Tasks[v]
			if index[t.ID] != v {
				continue // a duplicate id: drawn once
			}
			sub, row := k/maxRows, k%maxRows
			rows = max(rows, row+1)
			g.Nodes = append(g.Nodes, GraphNode{ID: t.ID, Status: t.Status, Level: level[v],
				X: marginX + (ci+sub)*(nodeW+gapX), Y: marginY + row*(nodeH+gapY), W: nodeW, H: nodeH,
				Critical: onPred[t.ID], Achieved: onAch[t.ID]})
		}
		ci += (len(col) + maxRows - 1) / maxRows
	}
	slices.SortStableFunc(g.Nodes, func(a, b GraphNode) int { return index[a.ID] - index[b.ID] })
	if n > 0 {
		g.Width = 2*marginX + ci*nodeW + (ci-1)*gapX
		g.Height = 2*marginY + rows*nodeH + (rows-1)*gapY
	}
	return g
}

// rowLimit is how many tasks a column holds before its layer wraps: about
// as many rows as the graph would have columns, never fewer than 4 nor
// more than 8.
func rowLimit(tasks, layers int) int {
	if layers == 0 {
		return 4
	}
	per := float64(tasks) / float64(layers)
	return min(8, max(4, int(math.Ceil(math.Sqrt(per*float64(layers)*nodeW/nodeH/3)))))
}

func set(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// pairs returns the consecutive pairs of a path.
func pairs(path []string) map[[2]string]bool {
	m := map[[2]string]bool{}
	for i := 1; i < len(path); i++ {
		m[[2]string{path[i-1], path[i]}] = true
	}
	return m
}
