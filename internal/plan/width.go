package plan

import (
	"math/bits"
	"slices"
)

// MaxExactWidthTasks bounds the plans whose width is computed exactly: the
// reachability relation takes n²/8 bytes (200 MB at 40,000 tasks). A larger
// plan reports its level width as the width, a lower bound, with
// Analysis.WidthExact false.
const MaxExactWidthTasks = 40_000

// reach is the strict reachability relation of a DAG as a bit matrix over
// topological positions: row i holds the positions of the tasks that
// depend, directly or not, on the task at position i. Every such position
// is greater than i, so a row's words before i/64 are zero and are never
// read.
type reach struct {
	n, w int
	bits []uint64
}

func (r *reach) row(i int32) []uint64 { return r.bits[int(i)*r.w : (int(i)+1)*r.w] }

// closure computes the reachability relation of g; order is a topological
// order of g and pos its inverse.
func closure(g graph, order, pos []int32) *reach {
	n := len(order)
	r := &reach{n: n, w: (n + 63) / 64}
	r.bits = make([]uint64, n*r.w)
	for i := n - 1; i >= 0; i-- {
		row := r.row(int32(i))
		for _, s := range g.succ[order[i]] {
			j := pos[s]
			if row[j>>6]&(1<<(j&63)) != 0 {
				continue // already reached through another dependent: so is all it reaches
			}
			row[j>>6] |= 1 << (j & 63)
			sub := r.row(j)
			for k := int(j >> 6); k < r.w; k++ {
				row[k] |= sub[k]
			}
		}
	}
	return r
}

// antichain returns a maximum antichain of the DAG g — a largest set of
// tasks none of which depends, directly or not, on another — and a
// minimum cover of the tasks by chains (sequences in which every task
// depends, directly or not, on the one before). By Dilworth's theorem
// both have the same size; that equality certifies the antichain is
// maximum. Both hold task indices; the antichain is sorted, each chain is
// in dependency order and the chains are sorted by their first task.
//
// The chains come from a maximum matching of the bipartite graph with an
// edge u→v for every pair where v depends on u (Hopcroft–Karp, on bit
// rows of the reachability relation), the antichain from the König cover
// of that matching. Time O(n²/64) per phase and O(√n) phases; memory
// n²/8 bytes.
func antichain(g graph, order []int32) (anti []int32, chains [][]int32) {
	n := len(order)
	if n == 0 {
		return []int32{}, [][]int32{}
	}
	pos := make([]int32, n)
	for i, v := range order {
		pos[v] = int32(i)
	}
	r := closure(g, order, pos)
	m := newMatching(r)
	m.maximize()

	// König: Z is what alternating paths reach from the unmatched left
	// vertices (left to right along any edge, right to left along the
	// matching). Vertices left in Z and right not in Z are incomparable.
	inZL := make([]bool, n)
	seenR := make([]uint64, r.w)
	queue := make([]int32, 0, n)
	for u := range int32(n) {
		if m.left[u] < 0 {
			inZL[u] = true
			queue = append(queue, u)
		}
	}
	for head := 0; head < len(queue); head++ {
		u := queue[head]
		row := r.row(u)
		for k := int(u >> 6); k < r.w; k++ {
			x := row[k] &^ seenR[k]
			seenR[k] |= x
			for ; x != 0; x &= x - 1 {
				v := int32(k<<6 + bits.TrailingZeros64(x))
				// v is matched: an unmatched one would end an augmenting path.
				if w := m.right[v]; !inZL[w] {
					inZL[w] = true
					queue = append(queue, w)
				}
			}
		}
	}
	for x := range int32(n) {
		if inZL[x] && seenR[x>>6]&(1<<(x&63)) == 0 {
			anti = append(anti, order[x])
		}
	}
	slices.Sort(anti)

	// The matching's pairs link consecutive tasks of a chain; a chain
	// starts at a task no pair leads to.
	for x := range int32(n) {
		if m.right[x] >= 0 {
			continue
		}
		var c []int32
		for y := x; y >= 0; y = m.left[y] {
			c = append(c, order[y])
		}
		chains = append(chains, c)
	}
	slices.SortFunc(chains, func(a, b []int32) int { return int(a[0] - b[0]) })
	return anti, chains
}

// matching is a bipartite matching between two copies of the positions:
// left[u] is the right vertex matched to left vertex u, right[v] the left
// vertex matched to v, -1 when unmatched. An edge u→v exists when r has v
// in row u.
type matching struct {
	r           *reach
	left, right []int32
	// Per phase of Hopcroft–Karp: layer[l] holds the right vertices the
	// breadth-first search first reached from left vertices of layer l;
	// alive, the right vertices not yet tried by the depth-first search.
	layer [][]uint64
	alive []uint64
}

func newMatching(r *reach) *matching {
	m := &matching{r: r, left: make([]int32, r.n), right: make([]int32, r.n), alive: make([]uint64, r.w)}
	for i := range m.left {
		m.left[i], m.right[i] = -1, -1
	}
	// Greedy start: each task, in topological order, takes the earliest
	// free task that depends on it.
	free := make([]uint64, r.w)
	for v := range r.n {
		free[v>>6] |= 1 << (v & 63)
	}
	for u := range int32(r.n) {
		row := r.row(u)
		for k := int(u >> 6); k < r.w; k++ {
			if x := row[k] & free[k]; x != 0 {
				v := int32(k<<6 + bits.TrailingZeros64(x))
				free[k] &^= 1 << (v & 63)
				m.left[u], m.right[v] = v, u
				break
			}
		}
	}
	return m
}

// maximize runs Hopcroft–Karp phases until no augmenting path is left.
func (m *matching) maximize() {
	r := m.r
	unseen := make([]uint64, r.w)
	var frontier, next []int32
	for {
		// Breadth-first from every unmatched left vertex, layer by layer,
		// until a layer reaches an unmatched right vertex.
		for k := range unseen {
			unseen[k] = ^uint64(0)
		}
		m.layer = m.layer[:0]
		frontier = frontier[:0]
		for u := range int32(r.n) {
			if m.left[u] < 0 {
				frontier = append(frontier, u)
			}
		}
		found := false
		for len(frontier) > 0 && !found {
			lb := make([]uint64, r.w)
			next = next[:0]
			for _, u := range frontier {
				row := r.row(u)
				for k := int(u >> 6); k < r.w; k++ {
					x := row[k] & unseen[k]
					if x == 0 {
						continue
					}
					unseen[k] &^= x
					lb[k] |= x
					for ; x != 0; x &= x - 1 {
						v := int32(k<<6 + bits.TrailingZeros64(x))
						if w := m.right[v]; w < 0 {
							found = true
						} else {
							next = append(next, w)
						}
					}
				}
			}
			m.layer = append(m.layer, lb)
			frontier, next = next, frontier
		}
		if !found {
			return
		}
		// Depth-first along the layers: vertex-disjoint shortest
		// augmenting paths, each right vertex tried once per phase.
		for k := range m.alive {
			m.alive[k] = ^uint64(0)
		}
		for u := range int32(r.n) {
			if m.left[u] < 0 {
				m.augment(u, 0)
			}
		}
	}
}

// augment looks for an augmenting path from left vertex u of layer l and
// flips it; it reports whether it found one.
func (m *matching) augment(u int32, l int) bool {
	row, lb := m.r.row(u), m.layer[l]
	for k := int(u >> 6); k < m.r.w; k++ {
		for x := row[k] & lb[k] & m.alive[k]; x != 0; x &= x - 1 {
			b := uint64(1) << bits.TrailingZeros64(x)
			if m.alive[k]&b == 0 {
				continue // tried deeper in this search since x was read
			}
			m.alive[k] &^= b
			v := int32(k<<6 + bits.TrailingZeros64(x))
			w := m.right[v]
			if w < 0 || l+1 < len(m.layer) && m.augment(w, l+1) {
				m.left[u], m.right[v] = v, u
				return true
			}
		}
	}
	return false
}
