package sched

import (
	"context"
	"sync"
	"time"
)

// DefaultMaxQueue is the wait-queue bound used when GateConfig.MaxQueue is 0.
const DefaultMaxQueue = 1024

// GateConfig configures a Gate. The zero value is a gate of one slot with
// strict priorities, no per-agent cap and a queue of DefaultMaxQueue.
type GateConfig struct {
	// Limit is the initial number of requests in flight; values below 1
	// mean 1. AIMD resizes it later through Gate.SetLimit.
	Limit int
	// PerAgent caps one agent's requests in flight; 0 means no cap. An
	// agent at its cap waits even when the gate has free slots, and its
	// waiters do not block other agents'.
	PerAgent int
	// MaxQueue bounds the number of waiters; 0 means DefaultMaxQueue and a
	// negative value means no waiting at all (Acquire fails with
	// ErrQueueFull whenever it cannot admit at once).
	MaxQueue int
	// AgingStep makes waiting raise priority: a class's effective priority
	// is its Class plus one for every AgingStep its oldest waiter has
	// waited, so no class starves however busy the higher ones are. Zero
	// means strict priorities.
	AgingStep time.Duration
	// Now is the clock used for aging; nil means time.Now.
	Now func() time.Time
}

// Request describes one request asking for admission.
type Request struct {
	// Agent identifies the requester for fair share and the per-agent cap.
	Agent string
	// Class is the priority class; higher classes are admitted first.
	Class int
	// Cost is the request's estimated size (tokens). Fair share charges an
	// agent by cost, so an agent sending large requests gets fewer of them.
	// Values below 1 (and NaN) count as 1.
	Cost float64
}

// LimitSetter is the one method AIMD needs from what it sizes; *Gate has it.
type LimitSetter interface {
	SetLimit(n int)
}

var _ LimitSetter = (*Gate)(nil)

// Gate is an admission gate: it bounds the requests in flight (overall and
// per agent) and makes the others wait in a bounded queue.
//
// Waiters are admitted in this order: highest effective class first (Class
// plus aging, see GateConfig.AgingStep); within a class, by start-time fair
// queueing between agents (each agent's requests are stamped with a virtual
// start time that advances by their Cost, so an agent with 50 queued requests
// cannot starve one with a single request); then by arrival.
//
// A Ticket is a slot: hold it only while the upstream call is in flight.
// Release it before sleeping in a retry backoff or a rate-limit wait and call
// Acquire again afterwards; a request asleep must hold no slot.
//
// Gate is safe for concurrent use.
type Gate struct {
	mu       sync.Mutex
	limit    int
	perAgent int
	maxQueue int
	aging    time.Duration
	now      func() time.Time

	inFlight int
	queued   int
	seq      uint64
	vtime    float64 // fair-queueing virtual time: start tag of the last admission
	agents   map[string]*agentState
	classes  []*classQueue // classes with at least one waiter
	spare    []*agentState // recycled agent states, to keep Acquire allocation-light
}

// NewGate returns a Gate configured by cfg.
func NewGate(cfg GateConfig) *Gate {
	g := &Gate{
		limit:    max(cfg.Limit, 1),
		perAgent: max(cfg.PerAgent, 0),
		maxQueue: cfg.MaxQueue,
		aging:    max(cfg.AgingStep, 0),
		now:      cfg.Now,
		agents:   make(map[string]*agentState),
	}
	switch {
	case g.maxQueue == 0:
		g.maxQueue = DefaultMaxQueue
	case g.maxQueue < 0:
		g.maxQueue = 0
	}
	if g.now == nil {
		g.now = time.Now
	}
	return g
}

// Ticket is an admission slot returned by Gate.Acquire. Release it exactly
// when the request stops using the upstream; extra Release calls are no-ops.
type Ticket struct {
	g        *Gate
	ag       *agentState
	released bool // guarded by g.mu

	// Waiting state, guarded by g.mu; unused when admitted at once.
	ready   chan struct{} // closed when granted
	granted bool
	fl      *flow
	tag     float64 // fair-queueing start tag
	seq     uint64
	enq     time.Time // enqueue time, set only when aging is on
	fprev   *Ticket   // the flow's FIFO
	fnext   *Ticket
	cprev   *Ticket // the class's arrival list
	cnext   *Ticket
}

// Acquire admits r or waits until it can be admitted. It returns
// ErrQueueFull at once if r would have to wait and the queue is full, and
// context.Cause(ctx) if ctx ends first; then no slot is held, even when the
// cancellation raced with a grant (the slot passes to the next waiter).
func (g *Gate) Acquire(ctx context.Context, r Request) (*Ticket, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	cost := r.Cost
	if !(cost >= 1) {
		cost = 1
	}
	g.mu.Lock()
	ag := g.agent(r.Agent)
	tag := max(g.vtime, ag.finish)
	if g.inFlight < g.limit && !g.blocked(ag) {
		// Admitted at once. No waiter can be passed over here: dispatch
		// leaves free slots only when every waiter's agent is at its cap.
		ag.finish = tag + cost
		g.vtime = tag
		g.inFlight++
		ag.inFlight++
		g.mu.Unlock()
		return &Ticket{g: g, ag: ag}, nil
	}
	if g.queued >= g.maxQueue {
		g.dropIfIdle(ag)
		g.mu.Unlock()
		return nil, ErrQueueFull
	}
	ag.finish = tag + cost
	t := &Ticket{g: g, ag: ag, ready: make(chan struct{}), tag: tag, seq: g.seq}
	g.seq++
	if g.aging > 0 {
		t.enq = g.now()
	}
	g.enqueue(t, r.Class)
	g.mu.Unlock()

	select {
	case <-t.ready:
		return t, nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if t.granted {
		g.mu.Unlock()
		t.Release()
		return nil, context.Cause(ctx)
	}
	g.dequeue(t)
	g.mu.Unlock()
	return nil, context.Cause(ctx)
}

// Release gives the slot back and admits the next waiter if there is room.
// It is safe to call more than once and on a nil Ticket.
func (t *Ticket) Release() {
	if t == nil {
		return
	}
	g := t.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.released {
		return
	}
	t.released = true
	ag := t.ag
	wasBlocked := g.blocked(ag)
	ag.inFlight--
	g.inFlight--
	if wasBlocked {
		g.unblock(ag)
	}
	g.dropIfIdle(ag)
	g.dispatch()
}

// SetLimit sets the number of requests allowed in flight; values below 1
// mean 1. Growing admits waiters at once. Shrinking revokes nothing: held
// tickets stay valid and new admissions wait until fewer than n are in
// flight.
func (g *Gate) SetLimit(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limit = max(n, 1)
	g.dispatch()
}

// Limit returns the current in-flight limit.
func (g *Gate) Limit() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limit
}

// InFlight returns the number of tickets held.
func (g *Gate) InFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight
}

// GateStats is a snapshot of a Gate.
type GateStats struct {
	Limit    int
	InFlight int
	Queued   int
	// Agents holds every agent with a request in flight or waiting.
	Agents map[string]AgentStats
}

// AgentStats is one agent's share of a GateStats.
type AgentStats struct {
	InFlight int
	Queued   int
}

// Stats returns a snapshot of the gate's counters.
func (g *Gate) Stats() GateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := GateStats{Limit: g.limit, InFlight: g.inFlight, Queued: g.queued,
		Agents: make(map[string]AgentStats, len(g.agents))}
	for name, ag := range g.agents {
		s.Agents[name] = AgentStats{InFlight: ag.inFlight, Queued: ag.queued}
	}
	return s
}

// dispatch admits waiters while there is room. Afterwards either the gate is
// full or every remaining waiter belongs to an agent at its cap.
func (g *Gate) dispatch() {
	for g.inFlight < g.limit {
		cq := g.best()
		if cq == nil {
			return
		}
		g.grant(cq.heap[0].head)
	}
}

// best returns the class whose waiters go next, or nil if no waiter is
// eligible.
func (g *Gate) best() *classQueue {
	var (
		best    *classQueue
		bestEff int64
		now     time.Time
	)
	age := g.aging > 0 && len(g.classes) > 1
	if age {
		now = g.now()
	}
	for _, cq := range g.classes {
		if len(cq.heap) == 0 {
			continue
		}
		eff := int64(cq.class)
		if age {
			eff += int64(now.Sub(cq.first.enq) / g.aging)
		}
		if best == nil || eff > bestEff || (eff == bestEff && cq.class > best.class) {
			best, bestEff = cq, eff
		}
	}
	return best
}

// blocked reports whether ag is at its per-agent cap.
func (g *Gate) blocked(ag *agentState) bool {
	return g.perAgent > 0 && ag.inFlight >= g.perAgent
}
