package dashboard

import (
	"fmt"
	"testing"
)

func tasks(ids ...string) []Task {
	out := make([]Task, len(ids))
	for i, id := range ids {
		out[i] = Task{ID: id, Status: StatusPending}
	}
	return out
}

func edges(pairs ...string) []Edge {
	var out []Edge
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Edge{From: pairs[i], To: pairs[i+1], Kind: EdgeData})
	}
	return out
}

func TestLayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		run    Run
		levels map[string]int
		crit   []string // critical nodes
		cedges int      // critical edges
		nedges int
	}{
		{"chain", Run{Tasks: tasks("a", "b", "c"), Edges: edges("a", "b", "b", "c"), Predicted: Path{Tasks: []string{"a", "b", "c"}}},
			map[string]int{"a": 0, "b": 1, "c": 2}, []string{"a", "b", "c"}, 2, 2},
		{"diamond with a long side", Run{Tasks: tasks("a", "b", "c", "d", "e"), Edges: edges("a", "b", "b", "c", "c", "e", "a", "d", "d", "e"), Predicted: Path{Tasks: []string{"a", "b", "c", "e"}}},
			map[string]int{"a": 0, "b": 1, "d": 1, "c": 2, "e": 3}, []string{"a", "b", "c", "e"}, 3, 5},
		{"independent tasks", Run{Tasks: tasks("x", "y", "z")}, map[string]int{"x": 0, "y": 0, "z": 0}, nil, 0, 0},
		{"spawned children", Run{Tasks: tasks("p", "c1", "c2"), Edges: []Edge{{From: "p", To: "c1", Kind: EdgeSpawn}, {From: "p", To: "c2", Kind: EdgeSpawn}}},
			map[string]int{"p": 0, "c1": 1, "c2": 1}, nil, 0, 2},
		{"unknown, self and repeated edges dropped", Run{Tasks: tasks("a", "b"), Edges: edges("a", "ghost", "ghost", "b", "a", "a", "a", "b", "a", "b")},
			map[string]int{"a": 0, "b": 1}, nil, 0, 1},
		{"cycle placed last", Run{Tasks: tasks("a", "b", "c"), Edges: edges("a", "b", "b", "c", "c", "b")},
			map[string]int{"a": 0, "b": 1, "c": 1}, nil, 0, 3},
		{"duplicate id drawn once", Run{Tasks: tasks("a", "a", "b"), Edges: edges("a", "b")},
			map[string]int{"a": 0, "b": 1}, nil, 0, 1},
		{"empty", Run{}, map[string]int{}, nil, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := layoutGraph(&tc.run)
			if len(g.Nodes) != len(tc.levels) || len(g.Edges) != tc.nedges {
				t.Fatalf("%d nodes, %d edges; want %d, %d: %+v", len(g.Nodes), len(g.Edges), len(tc.levels), tc.nedges, g)
			}
			crit := map[string]bool{}
			for _, n := range g.Nodes {
				if n.Level != tc.levels[n.ID] {
					t.Errorf("%s at level %d, want %d", n.ID, n.Level, tc.levels[n.ID])
				}
				if n.X+n.W > g.Width || n.Y+n.H > g.Height || n.X < 0 || n.Y < 0 {
					t.Errorf("%s at (%d,%d) outside %dx%d", n.ID, n.X, n.Y, g.Width, g.Height)
				}
				crit[n.ID] = n.Critical
			}
			for _, id := range tc.crit {
				if !crit[id] {
					t.Errorf("%s not marked critical", id)
				}
			}
			n := 0
			for _, e := range g.Edges {
				if e.Critical {
					n++
				}
			}
			if n != tc.cedges {
				t.Errorf("%d critical edges, want %d", n, tc.cedges)
			}
			assertNoOverlap(t, g)
		})
	}
}

func assertNoOverlap(t *testing.T, g *Graph) {
	t.Helper()
	for i, a := range g.Nodes {
		for _, b := range g.Nodes[i+1:] {
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				t.Errorf("%s and %s overlap", a.ID, b.ID)
			}
		}
	}
}

// TestLayoutArrowsPointRight: in any DAG every edge goes from a lower to a
// higher column.
func TestLayoutArrowsPointRight(t *testing.T) {
	t.Parallel()
	r := &Run{}
	for i := range 60 {
		id := fmt.Sprintf("t%02d", i)
		r.Tasks = append(r.Tasks, Task{ID: id, Status: StatusPending})
		for _, d := range []int{1, 3, 7} {
			if i%d == 0 && i >= d {
				r.Edges = append(r.Edges, Edge{From: fmt.Sprintf("t%02d", i-d), To: id, Kind: EdgeData})
			}
		}
	}
	g := layoutGraph(r)
	at := map[string]GraphNode{}
	for _, n := range g.Nodes {
		at[n.ID] = n
	}
	for _, e := range g.Edges {
		if at[e.From].X >= at[e.To].X {
			t.Errorf("edge %s -> %s points left", e.From, e.To)
		}
	}
	assertNoOverlap(t, g)
}

func BenchmarkLayout(b *testing.B) {
	r := &Run{}
	for i := range 1000 {
		id := fmt.Sprintf("t%04d", i)
		r.Tasks = append(r.Tasks, Task{ID: id})
		if i > 0 {
			r.Edges = append(r.Edges, Edge{From: fmt.Sprintf("t%04d", i/2), To: id, Kind: EdgeData})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		layoutGraph(r)
	}
}

// TestLayoutWraps: ten independent tasks make a block of columns, not one
// column ten rows tall, with no two boxes overlapping; a dependent task
// still lies right of every box of the layer before it.
func TestLayoutWraps(t *testing.T) {
	t.Parallel()
	var ids []string
	for i := range 10 {
		ids = append(ids, fmt.Sprintf("t%d", i))
	}
	r := &Run{Tasks: tasks(append(ids, "join")...)}
	for _, id := range ids {
		r.Edges = append(r.Edges, Edge{From: id, To: "join", Kind: EdgeData})
	}
	g := layoutGraph(r)
	rows := map[int]bool{}
	var join GraphNode
	for i, a := range g.Nodes {
		if a.ID == "join" {
			join = a
			continue
		}
		rows[a.Y] = true
		for _, b := range g.Nodes[i+1:] {
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				t.Errorf("%s %+v overlaps %s %+v", a.ID, a, b.ID, b)
			}
		}
	}
	if len(rows) > 5 || len(rows) < 3 {
		t.Errorf("the ten independent tasks take %d rows, want a block of 3 to 5", len(rows))
	}
	for _, a := range g.Nodes {
		if a.ID != "join" && a.X+a.W >= join.X {
			t.Errorf("join at x=%d is not right of %s (x=%d)", join.X, a.ID, a.X)
		}
		if a.X+a.W > g.Width || a.Y+a.H > g.Height {
			t.Errorf("%s lies outside the %dx%d graph", a.ID, g.Width, g.Height)
		}
	}
}
