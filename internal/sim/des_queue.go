package sim

// event is one scheduled happening of a simulation.
type event struct {
	t     float64
	seq   uint64 // ties in t run in scheduling order: determinism
	kind  uint8
	agent int32
	task  int32
}

// eventQueue is a binary min-heap of events ordered by (t, seq). It is
// written out rather than built on container/heap to avoid an interface
// call per comparison: the simulator spends most of its time here.
type eventQueue struct {
	h   []event
	seq uint64
}

func (q *eventQueue) len() int { return len(q.h) }

func less(a, b *event) bool {
	return a.t < b.t || a.t == b.t && a.seq < b.seq
}

// push schedules e (its seq is assigned here).
func (q *eventQueue) push(e event) {
	q.seq++
	e.seq = q.seq
	q.h = append(q.h, e)
	i := len(q.h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !less(&q.h[i], &q.h[parent]) {
			break
		}
		q.h[i], q.h[parent] = q.h[parent], q.h[i]
		i = parent
	}
}

// pop removes and returns the earliest event; the queue must not be empty.
func (q *eventQueue) pop() event {
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h = q.h[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= last {
			break
		}
		m := l
		if r := l + 1; r < last && less(&q.h[r], &q.h[l]) {
			m = r
		}
		if !less(&q.h[m], &q.h[i]) {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return top
}
