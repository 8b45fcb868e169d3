package runs

import (
	"container/heap"
	"fmt"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// speculation is a plan task's speculative attempts in progress: a quorum
// (quorum: {n, k}: n attempts, continue once k passed) or a hedge (a second
// attempt, possibly with another profile, after hedge_after_s or the p90 of
// the run's attempt times; the first to pass wins). Speculative attempts
// run the task's checks on their own candidate, so "passed" is known before
// integration; the first to pass is integrated and the others are
// cancelled.
type speculation struct {
	q      *supervise.Quorum
	index  map[uint64]int // fence → quorum index
	passed map[int]*attemptResult
}

// pushJob queues a job without touching its task's state (the task is
// busy with its other attempts).
func (r *runner) pushJob(j *job) {
	if j.t.dynamic {
		heap.Push(&r.kidsReady, j)
		return
	}
	heap.Push(&r.ready, j)
}

// specOpen reports whether a speculative job of t may still start.
func (t *taskState) specOpen() bool { return t.spec != nil && !t.done() }

// armSpeculation makes a plan task's worker attempt speculative when the
// plan asks for a quorum or a hedge: the first attempt sets up the
// speculation, queues the quorum's other attempts and arms the hedge.
func (r *runner) armSpeculation(t *taskState, a *attemptState, j *job) {
	if t.parent != nil {
		return
	}
	pt := r.plan.Task(t.name)
	if pt == nil {
		return
	}
	hedgeAfterS := pt.HedgeAfterS
	hedged := hedgeAfterS > 0 || pt.HedgeAgent != ""
	quorum := pt.Quorum != nil && pt.Quorum.N > 1
	if !hedged && !quorum && r.s.HedgeAfter > 0 {
		// The run's default hedge, for a task that asks for none of its own.
		hedgeAfterS, hedged = r.s.HedgeAfter.Seconds(), true
	}
	if !hedged && !quorum {
		return
	}
	a.spec = true
	if t.spec != nil {
		if i, ok := t.spec.q.Start(); ok {
			t.spec.index[a.fence] = i
		}
		return
	}
	n, k := 1, 1
	if quorum {
		n, k = pt.Quorum.N, pt.Quorum.K
	}
	q, err := supervise.NewQuorum(n, k)
	if err != nil {
		q, _ = supervise.NewQuorum(1, 1)
	}
	t.spec = &speculation{q: q, index: map[uint64]int{}, passed: map[int]*attemptResult{}}
	i, _ := q.Start()
	t.spec.index[a.fence] = i
	for range n - 1 {
		r.pushJob(&job{t: t, role: attempt.RoleWorker, spec: true})
	}
	if !hedged {
		return
	}
	h := supervise.Hedge{After: secondsDur(hedgeAfterS), Fallback: secondsDur(1.5 * pt.EstimateS)}
	delay, ok := h.Delay(&r.durations)
	if !ok {
		return
	}
	fence, profile := a.fence, pt.HedgeAgent
	t.hedge = time.AfterFunc(delay, func() { r.do(func() { r.hedgeNow(t, fence, profile) }) })
}

// hedgeNow starts a task's hedge if its first attempt is still running
// and nothing has passed yet.
func (r *runner) hedgeNow(t *taskState, first uint64, profile string) {
	t.hedge = nil
	if !t.specOpen() || t.live[first] == nil || t.live[first].abandoned {
		return
	}
	t.spec.q.Grow()
	r.must(r.st.Emit(Event{Kind: rundir.EvHedged, Task: t.name, Attempt: t.attempts + 1, Reason: "hedge with profile " + orDefault(profile, t.tmpl.Agent.Profile)}))
	r.pushJob(&job{t: t, role: attempt.RoleWorker, spec: true, profile: profile})
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// specResult records a speculative attempt's outcome. It returns true when
// the attempt's lease must be kept (it passed: it may be integrated).
func (r *runner) specResult(t *taskState, a *attemptState, res *attemptResult) bool {
	why := res.failure()
	if why == "" && len(res.failures) > 0 {
		why = "rejected: " + res.failures[0].Error()
		first, _ := gateReasons(res.failures)
		r.must(r.st.Emit(Event{Kind: rundir.EvGateRejected, Task: t.name, Attempt: a.n, Role: a.role, Gate: first}))
	}
	if why != "" {
		r.specFailed(t, a, fmt.Sprintf("attempt %d: %s", a.n, why))
		return false
	}
	sp := t.spec
	i := sp.index[a.fence]
	sp.passed[i] = res
	r.durations.Observe(secondsDur(res.usage.WallS))
	if sp.q.Pass(i) != supervise.Reached {
		return true
	}
	win := sp.passed[sp.q.Passed()[0]]
	wa := win.a
	r.must(r.st.Emit(Event{Kind: rundir.EvSpeculation, Task: t.name, Status: supervise.Reached.String(), Attempt: wa.n,
		Reason: fmt.Sprintf("%d attempt(s) passed; attempt %d's result is kept", len(sp.q.Passed()), wa.n)}))
	for f, la := range t.live {
		if f != wa.fence {
			r.abandon(t, la, errLostRace)
		}
	}
	r.leases.Seal(t.name, wa.fence) // the others' candidates can never be integrated
	if t.hedge != nil {
		t.hedge.Stop()
		t.hedge = nil
	}
	t.spec = nil
	t.base, t.candidate, t.changes = wa.base, win.candidate, win.changes
	r.keepChildren(t, wa, win.children)
	if win.candidate == "" {
		r.succeed(t, wa.base, "", nil)
		return false
	}
	r.queueIntegration(t, wa, win)
	return wa == a
}

// specFailed records a speculative attempt's failure; the task fails when
// its quorum can no longer be reached.
func (r *runner) specFailed(t *taskState, a *attemptState, why string) {
	sp := t.spec
	t.notes = append(t.notes, why)
	if sp.q.Fail(sp.index[a.fence]) != supervise.Lost {
		return
	}
	r.must(r.st.Emit(Event{Kind: rundir.EvSpeculation, Task: t.name, Status: supervise.Lost.String(), Reason: why}))
	for _, la := range t.live {
		r.abandon(t, la, errLostRace)
	}
	for _, res := range sp.passed {
		r.leases.Release(t.name, res.a.fence)
	}
	if t.hedge != nil {
		t.hedge.Stop()
		t.hedge = nil
	}
	t.spec = nil
	r.finish(t, envelope.StatusFailed, "too few speculative attempts passed: "+why, nil, nil)
}
