package sim

import (
	"math"
	"math/rand/v2"
	"sort"
)

// server is a coordination process that handles one message at a time in
// arrival order (a FIFO queue with a fixed service time per message).
// Heartbeats — a periodic stream from every agent, hundreds per second —
// are not scheduled one by one: they are a continuous load of fluid
// service seconds per second on their server (each agent's phase is
// random, so they arrive evenly), counted exactly at the end. Between
// discrete messages the server's unfinished work grows at fluid−1 per
// second and never falls below zero; a message that arrives waits for all
// the work ahead of it (Lindley's recursion). When fluid >= 1 the backlog
// grows without bound: the server is saturated and everything it must
// handle stalls.
type server struct {
	svc     float64
	fluid   float64 // heartbeat load, in service seconds per second
	last    float64 // time of the last update
	work    float64 // unfinished work at last
	demand  float64 // service asked by discrete messages
	maxWait float64
}

// serve accepts a message arriving at t and returns when it is handled. A
// message stamped before the last update (a reply the server emits while
// messages sent earlier are already queued) joins the queue then.
func (s *server) serve(t float64) float64 {
	if t > s.last {
		s.work = max(0, s.work+(s.fluid-1)*(t-s.last))
		s.last = t
	}
	done := s.last + s.work + s.svc
	s.work += s.svc
	s.demand += s.svc
	s.maxWait = max(s.maxWait, done-s.svc-t)
	return done
}

// Event kinds.
const (
	evStart       uint8 = iota // an agent starts an attempt of a task
	evWorkDone                 // an agent's work or rework is done: on to the merge role
	evIntegrate                // the merge role checks a candidate
	evCentral                  // the central scheduler handles a request (task < 0) or a completion
	evClaimTry                 // a self-organizing agent looks for a task on the board
	evGateClaim                // a shard gatekeeper receives a claim
	evWindowClose              // a gatekeeper grants a task to the best claim so far
	evBoardDone                // the board records a task's end
)

// wakeFanout is how many parked self-organizing agents the board wakes per
// task that becomes ready.
const wakeFanout = 4

type engine struct {
	p       SwarmParams
	tasks   []simTask
	q       eventQueue
	now     float64
	rng     *rand.Rand
	central server
	shards  []server
	merge   server
	index   bool    // agents see every integrated utility
	ready   []int32 // ready tasks, most critical first
	idle    []int32 // central: agents waiting for an assignment, FIFO
	parked  []int32 // self: agents that found nothing to claim, FIFO

	fileVer       []int64 // integration number that last wrote each file
	integrations  int64
	ifaceChanges  int64
	utilPublished []bool
	utilInFlight  []int32
	known         map[uint64]struct{} // (agent, utility) an agent wrote itself

	horizon  float64   // simulated time after which a run counts as stalled
	phase    []float64 // each agent's first heartbeat
	terminal int
	lastEnd  float64
	res      SwarmResult
}

// simulate runs the event loop to its end and returns the result.
func simulate(p SwarmParams, tasks []simTask) SwarmResult {
	nu := p.Utilities
	if nu == 0 {
		nu = max(1, len(tasks)/10)
	}
	e := &engine{
		p: p, tasks: tasks, rng: rand.New(rand.NewPCG(p.Seed, streamAgents)),
		central: server{svc: p.CentralMsgS}, merge: server{svc: p.IntegrateS},
		index:   p.Mode == ModeCentral || p.UtilityIndex,
		fileVer: make([]int64, p.Files), utilPublished: make([]bool, nu), utilInFlight: make([]int32, nu),
		known: map[uint64]struct{}{},
		res:   SwarmResult{Mode: p.Mode, Agents: p.Agents, Tasks: len(tasks)},
	}
	e.q.h = make([]event, 0, 2*p.Agents+16)
	if p.Mode == ModeSelf {
		e.shards = make([]server, p.Shards)
		for i := range e.shards {
			e.shards[i].svc = p.GateMsgS
		}
	}
	work := 0.0
	for i := range tasks {
		t := &tasks[i]
		t.pending = int32(len(t.deps))
		if t.pending == 0 {
			t.state = stReady
			e.ready = append(e.ready, int32(i))
		}
		work += t.dur
	}
	sort.Slice(e.ready, func(i, j int) bool { return e.before(e.ready[i], e.ready[j]) })
	// The horizon does not depend on the number of agents, so stalled runs
	// of different sizes are cut at the same time.
	e.horizon = stallFactor * (work + float64(len(tasks))*(p.OverheadS+p.IntegrateS) + 1)

	// Heartbeats: agent a sends its first at phase[a], then every
	// HeartbeatS, to the central scheduler or to its shard's gatekeeper.
	e.phase = make([]float64, p.Agents)
	for a := range e.phase {
		if p.HeartbeatS > 0 {
			e.phase[a] = e.rng.Float64() * p.HeartbeatS
			if p.Mode == ModeCentral {
				e.central.fluid += p.CentralMsgS / p.HeartbeatS
			} else {
				e.shards[a%len(e.shards)].fluid += p.GateMsgS / p.HeartbeatS
			}
		}
	}
	for a := range int32(p.Agents) {
		if p.Mode == ModeCentral {
			e.toCentral(a, -1)
		} else {
			e.push(0, evClaimTry, a, -1)
		}
	}
	for e.q.len() > 0 && e.terminal < len(tasks) {
		ev := e.q.pop()
		e.now = ev.t
		e.res.Events++
		if e.res.Events > maxEvents || e.now > e.horizon {
			e.res.Stalled = true
			break
		}
		e.handle(ev)
	}
	return e.finish()
}

func (e *engine) push(t float64, kind uint8, agent, task int32) {
	e.q.push(event{t: t, kind: kind, agent: agent, task: task})
}

// before orders ready tasks: most critical (highest bottom level) first,
// ties by index.
func (e *engine) before(a, b int32) bool {
	pa, pb := e.tasks[a].prio, e.tasks[b].prio
	return pa > pb || pa == pb && a < b
}

func (e *engine) addReady(t int32) {
	e.tasks[t].state = stReady
	i := sort.Search(len(e.ready), func(i int) bool { return !e.before(e.ready[i], t) })
	e.ready = append(e.ready, 0)
	copy(e.ready[i+1:], e.ready[i:])
	e.ready[i] = t
}

func (e *engine) removeReady(t int32) {
	i := sort.Search(len(e.ready), func(i int) bool { return !e.before(e.ready[i], t) })
	if i < len(e.ready) && e.ready[i] == t {
		e.ready = append(e.ready[:i], e.ready[i+1:]...)
	}
}

func (e *engine) msg(n int) { e.res.Messages += int64(n) }

func (e *engine) shardOf(t int32) int { return int(uint32(t)*2654435761>>7) % len(e.shards) }

func (e *engine) handle(ev event) {
	switch ev.kind {
	case evStart:
		e.startAttempt(ev.agent, ev.task)
	case evWorkDone:
		e.push(e.merge.serve(e.now), evIntegrate, ev.agent, ev.task)
	case evIntegrate:
		e.integrate(ev.agent, ev.task)
	case evCentral:
		if ev.task >= 0 && e.tasks[ev.task].state == stDone {
			e.release(ev.task)
		}
		e.idle = append(e.idle, ev.agent)
		e.dispatch()
	case evClaimTry:
		e.claimTry(ev.agent)
	case evGateClaim:
		e.gateClaim(ev.agent, ev.task)
	case evWindowClose:
		e.windowClose(ev.task)
	case evBoardDone:
		if e.tasks[ev.task].state != stDone {
			return
		}
		for n := e.release(ev.task) * wakeFanout; n > 0 && len(e.parked) > 0; n-- {
			a := e.parked[0]
			e.parked = e.parked[1:]
			e.msg(1) // the board's notification
			e.push(e.now+e.p.LatencyS, evClaimTry, a, -1)
		}
	}
}

// release marks t's children ready when t was their last dependency, and
// returns how many became ready.
func (e *engine) release(t int32) int {
	n := 0
	for _, c := range e.tasks[t].children {
		ct := &e.tasks[c]
		if ct.state != stPending {
			continue
		}
		if ct.pending--; ct.pending == 0 {
			e.addReady(c)
			n++
		}
	}
	return n
}

// toCentral sends the central scheduler a request for work (t < 0) or the
// end of task t, which is also a request for more.
func (e *engine) toCentral(a, t int32) {
	e.msg(1)
	e.push(e.central.serve(e.now+e.p.LatencyS), evCentral, a, t)
}

// dispatch assigns ready tasks to idle agents, most critical first; each
// assignment is a message the scheduler sends.
func (e *engine) dispatch() {
	for len(e.idle) > 0 && len(e.ready) > 0 {
		t, a := e.ready[0], e.idle[0]
		e.ready, e.idle = e.ready[1:], e.idle[1:]
		e.tasks[t].state = stClaimed
		e.msg(1)
		e.push(e.central.serve(e.now)+e.p.LatencyS, evStart, a, t)
	}
}

// claimTry: a self-organizing agent reads the board and claims one of the
// most critical ready tasks, or parks until the board wakes it.
func (e *engine) claimTry(a int32) {
	e.msg(1) // the board read
	if len(e.ready) == 0 {
		e.parked = append(e.parked, a)
		return
	}
	t := e.ready[e.rng.IntN(min(e.p.ClaimSpread, len(e.ready)))]
	e.msg(1) // the claim
	e.push(e.shards[e.shardOf(t)].serve(e.now+e.p.LatencyS), evGateClaim, a, t)
}

// gateClaim: the gatekeeper denies a claim on a task already granted, or
// adds it to the task's claim window, opening one if needed.
func (e *engine) gateClaim(a, t int32) {
	tk := &e.tasks[t]
	if tk.state != stReady {
		e.res.ClaimCollisions++
		e.msg(1) // the denial
		e.push(e.shards[e.shardOf(t)].serve(e.now)+e.p.LatencyS, evClaimTry, a, -1)
		return
	}
	tk.cands = append(tk.cands, claimCand{agent: a, score: e.rng.Float64()})
	if !tk.windowOpen {
		tk.windowOpen = true
		e.push(e.now+e.p.ClaimWindowS, evWindowClose, -1, t)
	}
}

// windowClose grants t to its best claim (ties: the earliest) and tells
// every claimant.
func (e *engine) windowClose(t int32) {
	tk := &e.tasks[t]
	tk.windowOpen = false
	win := 0
	for i, c := range tk.cands {
		if c.score > tk.cands[win].score {
			win = i
		}
	}
	tk.state = stClaimed
	e.removeReady(t)
	sh := &e.shards[e.shardOf(t)]
	for i, c := range tk.cands {
		e.msg(1) // grant or denial
		at := sh.serve(e.now) + e.p.LatencyS
		if i == win {
			e.msg(1) // the winner's intent
			e.push(at, evStart, c.agent, t)
			continue
		}
		e.res.ClaimCollisions++
		e.push(at, evClaimTry, c.agent, -1)
	}
	tk.cands = tk.cands[:0]
}

func knownKey(a, u int32) uint64 { return uint64(a)<<32 | uint64(uint32(u)) }

// startAttempt starts agent a on a new attempt of t on the current head.
func (e *engine) startAttempt(a, t int32) {
	tk := &e.tasks[t]
	tk.state, tk.ran = stClaimed, true
	tk.attempts++
	tk.reworks = 0
	tk.base, tk.ifaceBase = e.integrations, e.ifaceChanges
	tk.extra, tk.writingUtil, tk.firstUtil = 0, false, false
	if u := tk.util; u >= 0 {
		_, mine := e.known[knownKey(a, u)]
		if !mine && !(e.index && e.utilPublished[u]) {
			tk.extra, tk.writingUtil = e.p.UtilityFrac*tk.dur, true
			if e.utilPublished[u] || e.utilInFlight[u] > 0 {
				e.res.Duplicates++
			} else {
				tk.firstUtil = true
			}
			e.utilInFlight[u]++
			e.known[knownKey(a, u)] = struct{}{}
		}
	}
	work := e.p.OverheadS + tk.dur + tk.extra
	e.res.BusyWorkS += work
	e.push(e.now+work, evWorkDone, a, t)
}

// integrate is the merge role's check of t's candidate: a conflict sends it
// back for rework on the new head (at most maxReworks times an attempt);
// otherwise its tests pass or fail.
func (e *engine) integrate(a, t int32) {
	tk := &e.tasks[t]
	for _, f := range tk.writes {
		// After maxReworks conflicts in a row the candidate is reconciled
		// where it stands (its last rework), not sent back again.
		if e.fileVer[f] <= tk.base || tk.reworks >= maxReworks {
			continue
		}
		e.res.Conflicts++
		tk.reworks++
		tk.base = e.integrations
		rw := e.p.ReworkFrac * tk.dur
		e.res.BusyWorkS += rw
		e.push(e.now+rw, evWorkDone, a, t)
		return
	}
	pass := e.p.PassRate * math.Pow(1-e.p.MismatchPenalty, float64(e.ifaceChanges-tk.ifaceBase))
	if uniform01(e.p.Seed, int(t), tk.attempts) >= pass {
		e.res.TestFailures++
		e.attemptFailed(a, t)
		return
	}
	e.integrations++
	for _, f := range tk.writes {
		e.fileVer[f] = e.integrations
	}
	if tk.iface {
		e.ifaceChanges++
	}
	if tk.writingUtil {
		e.utilInFlight[tk.util]--
		e.utilPublished[tk.util] = true
	}
	tk.state = stDone
	e.res.Completed++
	e.res.EffectiveWorkS += tk.dur
	if tk.firstUtil {
		e.res.EffectiveWorkS += tk.extra
	}
	e.taskEnded(a, t)
}

// attemptFailed retries t on the same agent, or fails it for good and
// skips everything that depends on it.
func (e *engine) attemptFailed(a, t int32) {
	tk := &e.tasks[t]
	if tk.writingUtil {
		e.utilInFlight[tk.util]--
		tk.writingUtil = false
	}
	if tk.attempts < e.p.MaxAttempts {
		e.startAttempt(a, t)
		return
	}
	tk.state = stFailed
	e.res.Failed++
	stack := []int32{t}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range e.tasks[x].children {
			if ct := &e.tasks[c]; ct.state == stPending {
				ct.state = stSkipped
				e.res.Skipped++
				e.terminal++
				stack = append(stack, c)
			}
		}
	}
	e.taskEnded(a, t)
}

// taskEnded records that t is integrated or failed and frees its agent.
func (e *engine) taskEnded(a, t int32) {
	e.terminal++
	e.lastEnd = e.now
	if e.p.Mode == ModeCentral {
		e.toCentral(a, t)
		return
	}
	e.msg(1) // the board update
	e.push(e.shards[e.shardOf(t)].serve(e.now+e.p.LatencyS), evBoardDone, -1, t)
	e.claimTry(a)
}

// finish computes the summary figures.
func (e *engine) finish() SwarmResult {
	r := &e.res
	r.MakespanS = e.lastEnd
	if r.Stalled {
		r.MakespanS = min(e.now, e.horizon)
	}
	cp := make([]float64, len(e.tasks))
	for i := range e.tasks {
		tk := &e.tasks[i]
		if !tk.ran {
			continue
		}
		r.WorkS += tk.dur
		longest := 0.0
		for _, d := range tk.deps {
			longest = max(longest, cp[d])
		}
		cp[i] = longest + tk.dur
		r.CriticalPathS = max(r.CriticalPathS, cp[i])
	}
	if e.p.HeartbeatS > 0 {
		for _, ph := range e.phase {
			if r.MakespanS >= ph {
				r.Heartbeats += int64((r.MakespanS-ph)/e.p.HeartbeatS) + 1
			}
		}
		r.Messages += r.Heartbeats
	}
	r.MessagesPerTask = float64(r.Messages) / float64(r.Tasks)
	r.WorkTokens = r.BusyWorkS * e.p.WorkTokensPerS
	r.CoordTokens = float64(r.Heartbeats)*e.p.HeartbeatTokens + float64(r.Messages-r.Heartbeats)*e.p.MsgTokens
	if tot := r.WorkTokens + r.CoordTokens; tot > 0 {
		r.CoordShare = r.CoordTokens / tot
	}
	if r.MakespanS > 0 {
		for _, s := range append([]server{e.central}, e.shards...) {
			r.CoordLoad = max(r.CoordLoad, s.demand/r.MakespanS+s.fluid)
			r.MaxQueueWaitS = max(r.MaxQueueWaitS, s.maxWait)
		}
		r.MergeLoad = e.merge.demand / r.MakespanS
	}
	return *r
}
