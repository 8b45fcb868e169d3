package sched

import (
	"context"
	"sync"
	"time"
)

// PacerConfig configures a Pacer. The zero value paces by nothing until
// the server's headers teach it a limit.
type PacerConfig struct {
	// Requests, Input, Output and Total are known limits; a zero Limit is
	// learned from headers. Per is their period (default one minute); it
	// applies to these configured limits only, never to learned ones.
	Requests, Input, Output, Total Rate
	// AgingStep raises a waiting request's class by one per step (default
	// 2 s), so no class starves.
	AgingStep time.Duration
	// ProbeWidth: while a full window's end is known only to more than this
	// (default 200 ms), one request a window probes its middle (default
	// 200 ms).
	ProbeWidth time.Duration
	// FirstWindow is how many requests go before the server's first answer
	// (default 12; negative: no limit). Until an answer says what the
	// server allows, a first burst larger than its limit would be refused
	// beyond it; the others wait for that answer, or for FirstWait
	// (default 2 s) if it is slow to come. Only a Pacer with nothing
	// configured holds its first requests. Holding costs the held the end
	// of the window the run starts in when less than a round trip of it
	// is left; sending costs a 429 for each request of the burst over the
	// limit (see docs/benchmarks.md, the upstream zoo, for both measured).
	FirstWindow int
	FirstWait   time.Duration
	// ShareIdle bounds how long an agent that has had less than its share
	// of a full window keeps its claim to the rest of it while it is not
	// waiting (default 3 s; see share.go): while its request is in flight,
	// that long from its grant; after an answer, three times its usual
	// pause before its next request, up to that long.
	ShareIdle time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Ask is what a request asks a Pacer for.
type Ask struct {
	Agent string
	Class int  // higher goes first
	Cost  Cost // the estimate: input tokens, and the expected output
	// Retry puts the request before every new one: a retry, or the
	// continuation of a broken stream.
	Retry bool
}

// Pacer paces requests by a server's rate limits, learned from its headers
// or configured, in several dimensions at once (see window for the model).
// Requests wait in Wait in a queue that is revised whenever the model
// changes: every answer that moves a window's end, its count or the limit
// wakes the queue, which then grants, in order, every request the model
// admits now, and sleeps until the next time the model says something may
// change. No request is given a send time it must keep.
//
// The queue serves retries first, then by class (aged by AgingStep), then
// round-robin by agent: the agent whose latest grant is oldest goes first,
// so at capacity every agent gets a turn each window and none waits two
// windows while another sends twice. Where a window's limit, not time,
// ends its sending, an agent that has had its share of the window waits
// while agents that have had less are still at work (see share).
//
// Pacer is safe for concurrent use.
type Pacer struct {
	mu      sync.Mutex
	cfg     PacerConfig
	now     func() time.Time
	d       [numDims]window
	pause   time.Time
	waiting []*waiter
	arrival uint64
	seq     uint64
	agents  map[string]*paceAgent
	top     int // the highest class waiting, during next
	timer   *time.Timer
	wakeAt  time.Time
	closed  bool

	// The first window, until the server's first answer: learning says it
	// is open, firstOut counts its grants not settled, firstEnd is when
	// it gives up waiting for an answer (zero until its first grant).
	learning bool
	firstOut int
	firstEnd time.Time
}

type waiter struct {
	ask     Ask
	since   time.Time
	arrival uint64
	ready   chan struct{}
	grant   *Grant
	held    bool // by share, in the current pump
}

// Grant is a request's place in a window. Exactly one of Answer (the
// server answered, whatever the status), Cancel (it was never sent, or the
// server did not charge it and it will not be sent again) settles it; an
// unsettled grant may be sent again (a retry of an attempt the server did
// not charge keeps its place).
type Grant struct {
	p       *Pacer
	agent   *paceAgent
	cost    Cost
	granted time.Time
	win     [numDims]int64
	sent    time.Time
	settled bool
	first   bool // granted in the first window
	// Probe marks a grant sent ahead of a full window's estimated end to
	// find where it is.
	Probe bool
}

// NewPacer returns a Pacer configured by cfg.
func NewPacer(cfg PacerConfig) *Pacer {
	if cfg.AgingStep <= 0 {
		cfg.AgingStep = 2 * time.Second
	}
	if cfg.ProbeWidth <= 0 {
		cfg.ProbeWidth = 200 * time.Millisecond
	}
	if cfg.FirstWindow == 0 {
		cfg.FirstWindow = 12
	}
	if cfg.FirstWait <= 0 {
		cfg.FirstWait = 2 * time.Second
	}
	if cfg.ShareIdle <= 0 {
		cfg.ShareIdle = 3 * time.Second
	}
	configured := cfg.Requests.Limit > 0 || cfg.Input.Limit > 0 || cfg.Output.Limit > 0 || cfg.Total.Limit > 0
	p := &Pacer{cfg: cfg, now: cfg.Now, agents: map[string]*paceAgent{}, learning: cfg.FirstWindow > 0 && !configured}
	if p.now == nil {
		p.now = time.Now
	}
	p.d[Requests].configure(cfg.Requests)
	p.d[Requests].exact = true
	p.d[InputTokens].configure(cfg.Input)
	p.d[OutputTokens].configure(cfg.Output)
	p.d[TotalTokens].configure(cfg.Total)
	return p
}

// Wait queues a and returns its grant when the model admits it. It
// returns context.Cause(ctx) if ctx ends first.
func (p *Pacer) Wait(ctx context.Context, a Ask) (*Grant, error) {
	p.mu.Lock()
	now := p.now()
	p.arrival++
	w := &waiter{ask: a, since: now, arrival: p.arrival, ready: make(chan struct{})}
	p.waiting = append(p.waiting, w)
	p.arrive(now, a)
	p.pump(now)
	if w.grant != nil {
		p.mu.Unlock()
		return w.grant, nil
	}
	p.mu.Unlock()
	select {
	case <-w.ready:
		return w.grant, nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.grant != nil {
		// Granted as the context ended: give the place back.
		w.grant.cancelLocked()
	} else {
		for i, x := range p.waiting {
			if x == w {
				p.waiting = append(p.waiting[:i], p.waiting[i+1:]...)
				p.agents[a.Agent].waiting--
				break
			}
		}
	}
	p.pump(p.now())
	return nil, context.Cause(ctx)
}

// Waiting returns the number of requests queued.
func (p *Pacer) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiting)
}

// PauseUntil admits nothing before t (a 429 that says nothing of which
// window is full). Pauses only lengthen.
func (p *Pacer) PauseUntil(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.After(p.pause) {
		p.pause = t
	}
	p.pump(p.now())
}

// Close stops the Pacer's timer. Waiting requests still end with their
// contexts.
func (p *Pacer) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.timer != nil {
		p.timer.Stop()
	}
}

// Sent marks the moment the grant's request goes to the server (again, for
// a retry of an uncharged attempt).
func (g *Grant) Sent(at time.Time) {
	g.p.mu.Lock()
	g.sent = at
	g.p.mu.Unlock()
}

// Answer settles the grant with the server's answer received at recv: the
// figures of each dimension it reported (obs[d] with negative Limit and
// Remaining when absent), and whether the server charged the request
// (charged is only used where it sent no figures).
func (g *Grant) Answer(recv time.Time, obs [4]Observation, charged bool) {
	p := g.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if g.settled {
		return
	}
	g.settled = true
	sent := g.sent
	if sent.IsZero() {
		sent = recv
	}
	g.agent.settle(g, recv, charged)
	// Whatever the server said, it said what it allows (or that it sets
	// no limits): the first window is over.
	p.learning = false
	for d := range numDims {
		p.d[d].answer(float64(g.cost.of(d)), g.win[d], obs[d], sent, recv, charged)
	}
	p.pump(p.now())
}

// Cancel gives the grant's place back: its request was never charged.
func (g *Grant) Cancel() {
	g.p.mu.Lock()
	defer g.p.mu.Unlock()
	g.cancelLocked()
	g.p.pump(g.p.now())
}

func (g *Grant) cancelLocked() {
	if g.settled {
		return
	}
	g.settled = true
	g.agent.settle(g, g.p.now(), false)
	if g.first && g.p.learning {
		g.p.firstOut--
	}
	for d := range numDims {
		w := &g.p.d[d]
		w.inflight = max(w.inflight-float64(g.cost.of(d)), 0)
	}
}

// pump grants, in queue order, every waiter the model admits at now, and
// arms the timer for the next time the model may change by itself.
func (p *Pacer) pump(now time.Time) {
	for d := range numDims {
		p.d[d].roll(now)
	}
	for _, w := range p.waiting {
		w.held = false
	}
	var holdAt time.Time // the earliest a waiter held by share may go
	for len(p.waiting) > 0 {
		i := p.next(now)
		if i < 0 {
			p.arm(holdAt)
			return
		}
		w := p.waiting[i]
		ok, probe, at := p.admit(now, w.ask.Cost)
		if !ok {
			p.arm(earliest(at, holdAt))
			return
		}
		if !probe {
			if held, until := p.share(now, w.ask); held {
				w.held = true
				holdAt = earliest(holdAt, until)
				continue
			}
		}
		p.waiting = append(p.waiting[:i], p.waiting[i+1:]...)
		p.seq++
		a := p.agents[w.ask.Agent]
		a.waiting--
		a.served = p.seq
		g := &Grant{p: p, agent: a, cost: w.ask.Cost, Probe: probe, first: p.learning, granted: now}
		a.flights = append(a.flights, g)
		if p.learning {
			p.firstOut++
			if p.firstEnd.IsZero() {
				p.firstEnd = now.Add(p.cfg.FirstWait)
			}
		}
		for d := range numDims {
			x := &p.d[d]
			if n := w.ask.Cost.of(d); n > 0 && x.limit > 0 {
				x.start(now)
				if probe && !x.fits(float64(n)) {
					x.probed = true
				}
			}
			x.inflight += float64(w.ask.Cost.of(d))
			g.win[d] = x.n
			a.charge(d, x.n, float64(w.ask.Cost.of(d)))
		}
		w.grant = g
		close(w.ready)
	}
	p.arm(holdAt)
}

// earliest returns the earlier of two times, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// next returns the index of the waiter to serve first among those not
// held by share, or -1 if every one is.
func (p *Pacer) next(now time.Time) int {
	p.top = p.waiting[0].ask.Class
	for _, w := range p.waiting[1:] {
		p.top = max(p.top, w.ask.Class)
	}
	best := -1
	for i, w := range p.waiting {
		if !w.held && (best < 0 || p.before(now, w, p.waiting[best])) {
			best = i
		}
	}
	return best
}

func (p *Pacer) before(now time.Time, a, b *waiter) bool {
	if a.ask.Retry != b.ask.Retry {
		return a.ask.Retry
	}
	// Aging lifts a waiting request toward the highest class waiting, never
	// past it: among requests of one class the round-robin decides.
	ca := min(a.ask.Class+int(now.Sub(a.since)/p.cfg.AgingStep), p.top)
	cb := min(b.ask.Class+int(now.Sub(b.since)/p.cfg.AgingStep), p.top)
	if ca != cb {
		return ca > cb
	}
	if sa, sb := p.agents[a.ask.Agent].served, p.agents[b.ask.Agent].served; sa != sb {
		return sa < sb
	}
	return a.arrival < b.arrival
}

// admit says whether c may go at now, as a probe or not; if not, at is the
// next time that may change without an answer (zero: only an answer can
// change it).
func (p *Pacer) admit(now time.Time, c Cost) (ok, probe bool, at time.Time) {
	if now.Before(p.pause) {
		return false, false, p.pause
	}
	if p.learning && !p.firstEnd.IsZero() && !now.Before(p.firstEnd) {
		p.learning = false // no answer in time: stop waiting for one
	}
	if p.learning && p.firstOut >= p.cfg.FirstWindow {
		return false, false, p.firstEnd
	}
	var probeTimes []time.Time
	full := 0
	for d := range numDims {
		w := &p.d[d]
		n := float64(c.of(d))
		if w.fits(n) {
			continue
		}
		full++
		next := w.end()
		if w.bucket {
			next = w.refillAt(n)
		}
		if next.IsZero() {
			next = w.staleAt()
		}
		if pt := w.probeAt(p.cfg.ProbeWidth); !pt.IsZero() {
			probeTimes = append(probeTimes, pt)
			if next.IsZero() || pt.Before(next) {
				next = pt
			}
		}
		if next.IsZero() {
			return false, false, time.Time{}
		}
		if !next.After(now) {
			// The model disagrees with itself about now; never spin on it.
			next = now.Add(time.Millisecond)
		}
		if next.After(at) {
			at = next
		}
	}
	if full == 0 {
		return true, false, time.Time{}
	}
	if len(probeTimes) == full {
		// Every full dimension may be probed: probe once the latest of
		// their middles has come.
		latest := probeTimes[0]
		for _, t := range probeTimes[1:] {
			if t.After(latest) {
				latest = t
			}
		}
		if !now.Before(latest) {
			return true, true, time.Time{}
		}
	}
	return false, false, at
}

// arm sets the timer to pump at t (zero: no timer).
func (p *Pacer) arm(t time.Time) {
	if p.closed {
		return
	}
	if t.IsZero() {
		if p.timer != nil && !p.wakeAt.IsZero() {
			p.timer.Stop()
			p.wakeAt = time.Time{}
		}
		return
	}
	if t.Equal(p.wakeAt) {
		return
	}
	p.wakeAt = t
	d := max(t.Sub(p.now()), 0)
	if p.timer == nil {
		p.timer = time.AfterFunc(d, p.wake)
		return
	}
	p.timer.Reset(d)
}

func (p *Pacer) wake() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wakeAt = time.Time{}
	p.pump(p.now())
}

// LimitStats describes one dimension of a Pacer.
type LimitStats struct {
	Dim Dim
	// Limit is the effective limit (0: unknown) and Source where it came
	// from.
	Limit  int64
	Source Source
	// Period is the window's length and PeriodSource where it came from;
	// Period is zero while neither configured nor learned.
	Period       time.Duration
	PeriodSource Source
	// Used is the model's count in the current window, InFlight the part
	// of it not answered yet.
	Used, InFlight float64
	// ResetAt is the late end of the current window (zero: not known) and
	// ResetUncertainty the width of the interval it lies in.
	ResetAt          time.Time
	ResetUncertainty time.Duration
	// Continuous says the server was found to refill continuously (a
	// bucket), and RefillPerSecond is the least rate it refills at.
	Continuous      bool
	RefillPerSecond float64
}

// Stats returns a snapshot of every dimension with a known limit.
func (p *Pacer) Stats() []LimitStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []LimitStats
	for d := range numDims {
		w := &p.d[d]
		if w.limit == 0 {
			continue
		}
		s := LimitStats{Dim: Dim(d), Limit: int64(w.limit), Source: w.src, Period: w.period, PeriodSource: w.periodSrc,
			Used: w.est(), InFlight: w.inflight, ResetAt: w.end()}
		if !w.ref.IsZero() {
			s.ResetUncertainty = w.hi - w.lo
		}
		if w.bucket {
			s.Continuous, s.RefillPerSecond = true, w.rateLo*float64(time.Second)
		}
		if s.Period == 0 {
			s.PeriodSource = SourceNone
		}
		out = append(out, s)
	}
	return out
}

// Projected returns how long a request of cost c asked now would wait,
// roughly: the windows the queue ahead of it fills, each one period. A
// dimension whose period and current end are both unknown adds nothing: the
// pacer does not guess. It is a plan, not a promise: every answer revises it.
func (p *Pacer) Projected(c Cost) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	var wait time.Duration
	if p.pause.After(now) {
		wait = p.pause.Sub(now)
	}
	for d := range numDims {
		w := &p.d[d]
		n := float64(c.of(d))
		if w.limit == 0 || n == 0 {
			continue
		}
		ahead := n
		for _, x := range p.waiting {
			ahead += float64(x.ask.Cost.of(d))
		}
		over := w.est() + ahead - w.limit
		if over <= 0 {
			continue
		}
		var first time.Duration
		switch e := w.end(); {
		case !e.IsZero() && e.After(now):
			first = e.Sub(now)
		case w.period > 0:
			first = w.period
		default:
			continue
		}
		t := first
		if w.period > 0 {
			t += time.Duration(int64(over/w.limit)) * w.period
		}
		wait = max(wait, t)
	}
	return wait
}
