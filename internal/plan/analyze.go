package plan

import (
	"math"
	"slices"
)

// Analysis is what the plan's shape promises, from the tasks' estimate_s.
type Analysis struct {
	Tasks   int `json:"tasks"`
	Workers int `json:"workers"`
	// WorkS is the sum of all estimates: the time one worker needs.
	WorkS float64 `json:"work_s"`
	// CriticalPath is the longest chain by estimate, in execution order;
	// CriticalPathS is its length, the least makespan with any number of
	// workers.
	CriticalPath  []string `json:"critical_path"`
	CriticalPathS float64  `json:"critical_path_s"`
	// Width is the most tasks that can run at once as far as the
	// dependencies go: the size of a maximum antichain, a largest set of
	// tasks none of which depends, directly or through others, on another
	// (Dilworth: the fewest chains of dependent tasks that cover the plan).
	// Antichain is one such set, in file order. Above MaxExactWidthTasks
	// tasks WidthExact is false, Antichain is the widest level and Width its
	// size, a lower bound.
	Width      int      `json:"width"`
	WidthExact bool     `json:"width_exact"`
	Antichain  []string `json:"antichain"`
	// LevelWidth is the largest number of tasks at one level, where a
	// task's level is the length in edges of the longest dependency chain
	// leading to it; Levels is the number of levels. Tasks of one level
	// are independent, so LevelWidth <= Width, and it can be smaller: a
	// task may be independent of tasks on other levels.
	LevelWidth int `json:"level_width"`
	Levels     int `json:"levels"`
	// PeakParallelism is the most tasks running at once when every task
	// starts as early as its dependencies allow on unlimited workers.
	PeakParallelism int `json:"peak_parallelism"`
	// MakespanS is the length of a list schedule on Workers workers that
	// always starts the ready task with the longest remaining chain (its
	// bottom level: its estimate plus the longest chain of dependents);
	// ties go to the task first in the file.
	MakespanS float64 `json:"makespan_s"`
	// Speedup is WorkS / MakespanS.
	Speedup float64 `json:"speedup"`
	// SpanBound is min(Workers, WorkS / CriticalPathS), the work-span upper
	// bound on any schedule's speedup.
	SpanBound float64 `json:"span_bound"`
	// SerialFraction is the share of the work that, in the unlimited-worker
	// schedule, runs while no other task runs; AmdahlBound is Amdahl's law
	// with that serial fraction on Workers workers, 1 / (s + (1 − s) / P).
	SerialFraction float64 `json:"serial_fraction"`
	AmdahlBound    float64 `json:"amdahl_bound"`
	// DefaultedEstimates counts tasks without estimate_s (taken as 60 s).
	DefaultedEstimates int `json:"defaulted_estimates"`
	// Schedule is the list schedule, in start order.
	Schedule []Slot `json:"schedule,omitempty"`
}

// Slot is one task's place in the list schedule.
type Slot struct {
	ID      string  `json:"id"`
	Worker  int     `json:"worker"` // 0-based
	StartS  float64 `json:"start_s"`
	FinishS float64 `json:"finish_s"`
}

// BottomLevels returns each task's bottom level — its estimate plus the
// longest chain of estimates among the tasks that depend on it — the
// priority of critical-path-first scheduling. Keys are task ids.
func (p *Plan) BottomLevels() map[string]float64 {
	g := p.graph()
	order, _ := g.topo()
	bl := bottomLevels(p, g, order)
	out := make(map[string]float64, len(bl))
	for i, t := range p.Tasks {
		out[t.ID] = bl[i]
	}
	return out
}

func bottomLevels(p *Plan, g graph, order []int32) []float64 {
	bl := make([]float64, len(p.Tasks))
	for k := len(order) - 1; k >= 0; k-- {
		v := order[k]
		best := 0.0
		for _, s := range g.succ[v] {
			best = max(best, bl[s])
		}
		bl[v] = p.Tasks[v].EstimateS + best
	}
	return bl
}

// CriticalPath returns the plan's critical path by estimates (task ids in
// order) and its length in seconds: the part of Analyze a run's report
// needs, without the schedule and the width.
func (p *Plan) CriticalPath() ([]string, float64) {
	g := p.graph()
	order, _ := g.topo()
	dur := make([]float64, len(p.Tasks))
	for i, t := range p.Tasks {
		dur[i] = t.EstimateS
	}
	est, _, via, end := earliest(g, order, dur)
	if end < 0 {
		return []string{}, 0
	}
	return criticalPath(p, est, dur, via, end)
}

// earliest computes each task's earliest start, its level (longest chain
// of dependencies above it), the predecessor that sets its start (-1 for
// none) and the task that finishes last (-1 for an empty plan), visiting
// tasks in topological order.
func earliest(g graph, order []int32, dur []float64) (est []float64, level []int, via []int32, end int32) {
	n := len(dur)
	est, level, via, end = make([]float64, n), make([]int, n), make([]int32, n), -1
	for _, v := range order {
		via[v] = -1
		for _, u := range g.pred[v] {
			if f := est[u] + dur[u]; f > est[v] || via[v] < 0 && f == est[v] || f == est[v] && u < via[v] {
				est[v], via[v] = f, u
			}
			level[v] = max(level[v], level[u]+1)
		}
		if end < 0 || est[v]+dur[v] > est[end]+dur[end] || est[v]+dur[v] == est[end]+dur[end] && v < end {
			end = v
		}
	}
	return est, level, via, end
}

// criticalPath follows via back from end.
func criticalPath(p *Plan, est, dur []float64, via []int32, end int32) ([]string, float64) {
	var path []string
	for v := end; v >= 0; v = via[v] {
		path = append(path, p.Tasks[v].ID)
	}
	slices.Reverse(path)
	return path, est[end] + dur[end]
}

// Analyze computes the plan's analysis for a list schedule on workers
// workers; workers < 1 means the plan's max_parallel.
func (p *Plan) Analyze(workers int) *Analysis {
	if workers < 1 {
		workers = p.MaxParallel
	}
	n := len(p.Tasks)
	g := p.graph()
	order, _ := g.topo() // Parse rejected cycles
	a := &Analysis{Tasks: n, Workers: workers, CriticalPath: []string{}}
	dur := make([]float64, n)
	for i, t := range p.Tasks {
		dur[i] = t.EstimateS
		a.WorkS += t.EstimateS
		if t.EstimateDefaulted {
			a.DefaultedEstimates++
		}
	}

	// Earliest starts, levels and the critical path.
	est, level, via, end := earliest(g, order, dur)
	perLevel := make([]int, n)
	for _, v := range order {
		perLevel[level[v]]++
	}
	if end >= 0 {
		a.CriticalPath, a.CriticalPathS = criticalPath(p, est, dur, via, end)
	}
	widest := 0
	for l, c := range perLevel {
		if c > 0 {
			if c > a.LevelWidth {
				a.LevelWidth, widest = c, l
			}
			a.Levels = l + 1
		}
	}
	a.Antichain = []string{}
	if n <= MaxExactWidthTasks {
		anti, _ := antichain(g, order)
		for _, v := range anti {
			a.Antichain = append(a.Antichain, p.Tasks[v].ID)
		}
		a.WidthExact = true
	} else {
		for i := range n {
			if level[i] == widest {
				a.Antichain = append(a.Antichain, p.Tasks[i].ID)
			}
		}
	}
	a.Width = len(a.Antichain)

	a.PeakParallelism, a.SerialFraction = profile(est, dur, a.WorkS)
	a.Schedule = listSchedule(p, g, dur, bottomLevels(p, g, order), workers)
	for _, s := range a.Schedule {
		a.MakespanS = max(a.MakespanS, s.FinishS)
	}
	a.Speedup = ratio(a.WorkS, a.MakespanS)
	a.SpanBound = math.Min(float64(workers), ratio(a.WorkS, a.CriticalPathS))
	a.AmdahlBound = 1 / (a.SerialFraction + (1-a.SerialFraction)/float64(workers))
	return a
}

// ratio is x/y, or 1 when both are zero (a plan of zero-length tasks).
func ratio(x, y float64) float64 {
	if y == 0 {
		return 1
	}
	return x / y
}

// profile sweeps the unlimited-worker schedule (task i runs from est[i] for
// dur[i]) and returns the peak concurrency and the share of work done while
// exactly one task runs.
func profile(est, dur []float64, work float64) (peak int, serial float64) {
	type event struct {
		t     float64
		delta int
	}
	ev := make([]event, 0, 2*len(est))
	for i := range est {
		if dur[i] > 0 {
			ev = append(ev, event{est[i], +1}, event{est[i] + dur[i], -1})
		}
	}
	// Ends before starts at the same instant: back-to-back tasks do not overlap.
	slices.SortFunc(ev, func(x, y event) int {
		if x.t != y.t {
			if x.t < y.t {
				return -1
			}
			return 1
		}
		return x.delta - y.delta
	})
	running, alone := 0, 0.0
	for k, e := range ev {
		running += e.delta
		peak = max(peak, running)
		if running == 1 && k+1 < len(ev) {
			alone += ev[k+1].t - e.t
		}
	}
	if work == 0 {
		return peak, 1
	}
	return peak, alone / work
}

// Replay replays the list schedule of Analyze with durations other than
// the estimates (sampled ones, say): the same workers and the same
// priorities, which stay the bottom levels of the estimates, as a
// scheduler that knows only the estimates would use. Safe for concurrent
// use.
type Replay struct {
	p       *Plan
	g       graph
	bl      []float64
	workers int
}

// Replay returns a Replay on workers workers; workers < 1 means the plan's
// max_parallel.
func (p *Plan) Replay(workers int) *Replay {
	if workers < 1 {
		workers = p.MaxParallel
	}
	g := p.graph()
	order, _ := g.topo()
	return &Replay{p: p, g: g, bl: bottomLevels(p, g, order), workers: workers}
}

// Makespan returns the length of the list schedule when task i (in file
// order) takes dur[i] seconds.
func (r *Replay) Makespan(dur []float64) float64 {
	end := 0.0
	for _, s := range listSchedule(r.p, r.g, dur, r.bl, r.workers) {
		end = max(end, s.FinishS)
	}
	return end
}

// listSchedule simulates workers workers taking ready tasks in descending
// bottom level (ties: file order); task i takes dur[i].
func listSchedule(p *Plan, g graph, dur, bl []float64, workers int) []Slot {
	n := len(p.Tasks)
	indeg := make([]int32, n)
	ready := &pq[int32]{less: func(a, b int32) bool {
		if bl[a] != bl[b] {
			return bl[a] > bl[b]
		}
		return a < b
	}}
	for i := range n {
		indeg[i] = int32(len(g.pred[i]))
		if indeg[i] == 0 {
			ready.push(int32(i))
		}
	}
	free := make([]int, workers) // a stack of free worker ids; the lowest is on top at first
	for w := range free {
		free[w] = workers - 1 - w
	}
	running := &pq[run]{less: func(a, b run) bool {
		if a.finish != b.finish {
			return a.finish < b.finish
		}
		return a.task < b.task
	}}
	slots := make([]Slot, 0, n)
	now := 0.0
	for len(slots) < n || running.Len() > 0 {
		for ready.Len() > 0 && len(free) > 0 {
			v := ready.pop()
			w := free[len(free)-1]
			free = free[:len(free)-1]
			fin := now + dur[v]
			slots = append(slots, Slot{ID: p.Tasks[v].ID, Worker: w, StartS: now, FinishS: fin})
			running.push(run{fin, v, w})
		}
		if running.Len() == 0 {
			break
		}
		now = running.items[0].finish
		for running.Len() > 0 && running.items[0].finish == now {
			r := running.pop()
			free = append(free, r.worker)
			for _, s := range g.succ[r.task] {
				if indeg[s]--; indeg[s] == 0 {
					ready.push(s)
				}
			}
		}
	}
	return slots
}

// pq is a binary min-heap under less.
type pq[T any] struct {
	items []T
	less  func(a, b T) bool
}

func (h *pq[T]) Len() int { return len(h.items) }

func (h *pq[T]) push(x T) {
	h.items = append(h.items, x)
	i := len(h.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(h.items[i], h.items[parent]) {
			break
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *pq[T]) pop() T {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.less(h.items[l], h.items[m]) {
			m = l
		}
		if r < last && h.less(h.items[r], h.items[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}

type run struct {
	finish float64
	task   int32
	worker int
}
