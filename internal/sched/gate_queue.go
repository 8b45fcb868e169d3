package sched

// The Gate's wait queue. Waiters are grouped into flows, one per (agent,
// class) pair. An agent's start tags grow with every request it makes, so a
// flow is a FIFO and its head carries its smallest tag. Each class keeps a
// heap of the flows that may be served now (non-empty, agent below its cap)
// ordered by their head's tag, plus an arrival list of all its waiters whose
// first element gives the class's age. Choosing the next waiter is a scan
// over the few active classes and a heap pop; cancelling a waiter is O(log n).

// spareAgents bounds the recycled agent states a Gate keeps.
const spareAgents = 32

// agentState is what the gate knows about one agent with work in it.
type agentState struct {
	name     string
	inFlight int
	queued   int
	finish   float64 // finish tag of the agent's latest request
	flows    []*flow // the agent's non-empty flows
}

// flow is one agent's waiters in one class, in arrival order.
type flow struct {
	ag   *agentState
	cq   *classQueue
	head *Ticket
	tail *Ticket
	hidx int // index in cq.heap, or -1 when not eligible
}

// classQueue holds the waiters of one priority class.
type classQueue struct {
	class int
	n     int     // waiters, eligible or not
	heap  []*flow // eligible flows by head (tag, seq)
	first *Ticket // arrival list; first is the oldest waiter
	last  *Ticket
}

func (g *Gate) agent(name string) *agentState {
	if ag, ok := g.agents[name]; ok {
		return ag
	}
	var ag *agentState
	if n := len(g.spare); n > 0 {
		ag = g.spare[n-1]
		g.spare = g.spare[:n-1]
		ag.name = name
	} else {
		ag = &agentState{name: name}
	}
	g.agents[name] = ag
	return ag
}

// dropIfIdle forgets an agent with nothing in flight or waiting. Forgetting
// its finish tag is what start-time fair queueing wants: an agent that was
// idle earns no credit for the time it did not compete.
func (g *Gate) dropIfIdle(ag *agentState) {
	if ag.inFlight != 0 || ag.queued != 0 {
		return
	}
	delete(g.agents, ag.name)
	if len(g.spare) < spareAgents {
		*ag = agentState{flows: ag.flows[:0]}
		g.spare = append(g.spare, ag)
	}
}

func (g *Gate) class(c int) *classQueue {
	for _, cq := range g.classes {
		if cq.class == c {
			return cq
		}
	}
	cq := &classQueue{class: c}
	g.classes = append(g.classes, cq)
	return cq
}

func (g *Gate) removeClassIfEmpty(cq *classQueue) {
	if cq.n != 0 {
		return
	}
	for i, c := range g.classes {
		if c == cq {
			last := len(g.classes) - 1
			g.classes[i] = g.classes[last]
			g.classes[last] = nil
			g.classes = g.classes[:last]
			return
		}
	}
}

func (ag *agentState) flow(cq *classQueue) *flow {
	for _, f := range ag.flows {
		if f.cq == cq {
			return f
		}
	}
	f := &flow{ag: ag, cq: cq, hidx: -1}
	ag.flows = append(ag.flows, f)
	return f
}

func (ag *agentState) removeFlow(f *flow) {
	for i, x := range ag.flows {
		if x == f {
			last := len(ag.flows) - 1
			ag.flows[i] = ag.flows[last]
			ag.flows[last] = nil
			ag.flows = ag.flows[:last]
			return
		}
	}
}

// enqueue adds a waiter of class c.
func (g *Gate) enqueue(t *Ticket, c int) {
	cq := g.class(c)
	f := t.ag.flow(cq)
	t.fl = f
	if f.tail == nil {
		f.head = t
	} else {
		f.tail.fnext = t
		t.fprev = f.tail
	}
	f.tail = t
	if cq.last == nil {
		cq.first = t
	} else {
		cq.last.cnext = t
		t.cprev = cq.last
	}
	cq.last = t
	cq.n++
	g.queued++
	t.ag.queued++
	if f.hidx < 0 && !g.blocked(t.ag) {
		cq.push(f)
	}
}

// unlink removes t from its flow and class lists and from the counters,
// and repairs its flow's place in the heap.
func (g *Gate) unlink(t *Ticket) {
	f, ag := t.fl, t.ag
	cq := f.cq
	wasHead := f.head == t
	if t.fprev != nil {
		t.fprev.fnext = t.fnext
	} else {
		f.head = t.fnext
	}
	if t.fnext != nil {
		t.fnext.fprev = t.fprev
	} else {
		f.tail = t.fprev
	}
	if t.cprev != nil {
		t.cprev.cnext = t.cnext
	} else {
		cq.first = t.cnext
	}
	if t.cnext != nil {
		t.cnext.cprev = t.cprev
	} else {
		cq.last = t.cprev
	}
	t.fl, t.fprev, t.fnext, t.cprev, t.cnext = nil, nil, nil, nil, nil
	cq.n--
	g.queued--
	ag.queued--
	switch {
	case f.head == nil:
		if f.hidx >= 0 {
			cq.remove(f.hidx)
		}
		ag.removeFlow(f)
	case wasHead && f.hidx >= 0:
		cq.fix(f.hidx)
	}
	g.removeClassIfEmpty(cq)
}

// dequeue removes a cancelled waiter.
func (g *Gate) dequeue(t *Ticket) {
	g.unlink(t)
	g.dropIfIdle(t.ag)
}

// grant admits the waiter t.
func (g *Gate) grant(t *Ticket) {
	ag := t.ag
	g.unlink(t)
	g.inFlight++
	ag.inFlight++
	g.vtime = max(g.vtime, t.tag)
	t.granted = true
	close(t.ready)
	if g.blocked(ag) {
		g.block(ag)
	}
}

// block takes an agent that reached its cap out of every class heap.
func (g *Gate) block(ag *agentState) {
	for _, f := range ag.flows {
		if f.hidx >= 0 {
			f.cq.remove(f.hidx)
		}
	}
}

// unblock puts an agent that dropped below its cap back into the heaps.
func (g *Gate) unblock(ag *agentState) {
	for _, f := range ag.flows {
		if f.hidx < 0 {
			f.cq.push(f)
		}
	}
}

// The class heap: a binary min-heap of flows by (head.tag, head.seq), each
// flow knowing its index.

func (cq *classQueue) less(i, j int) bool {
	a, b := cq.heap[i].head, cq.heap[j].head
	if a.tag != b.tag {
		return a.tag < b.tag
	}
	return a.seq < b.seq
}

func (cq *classQueue) swap(i, j int) {
	h := cq.heap
	h[i], h[j] = h[j], h[i]
	h[i].hidx = i
	h[j].hidx = j
}

func (cq *classQueue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !cq.less(i, p) {
			return
		}
		cq.swap(i, p)
		i = p
	}
}

func (cq *classQueue) down(i int) bool {
	start, n := i, len(cq.heap)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && cq.less(r, l) {
			m = r
		}
		if !cq.less(m, i) {
			break
		}
		cq.swap(i, m)
		i = m
	}
	return i > start
}

func (cq *classQueue) push(f *flow) {
	f.hidx = len(cq.heap)
	cq.heap = append(cq.heap, f)
	cq.up(f.hidx)
}

func (cq *classQueue) remove(i int) {
	last := len(cq.heap) - 1
	f := cq.heap[i]
	if i != last {
		cq.swap(i, last)
	}
	cq.heap[last] = nil
	cq.heap = cq.heap[:last]
	f.hidx = -1
	if i != last {
		cq.fix(i)
	}
}

func (cq *classQueue) fix(i int) {
	if !cq.down(i) {
		cq.up(i)
	}
}
