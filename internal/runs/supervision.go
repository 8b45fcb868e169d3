package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/proc"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// Causes of an attempt's end that are not its task's cancellation.
var (
	errLeaseLapsed = errors.New("its lease lapsed")
	errLostRace    = errors.New("another attempt won")
	errRestart     = errors.New("restarted by its supervision group")
	errTaskOver    = errors.New("its task is over")
)

// cancelReason is the receipt reason of a task whose context ended. The
// receipt's status already says "cancelled": the reason says why, and
// where the cancellation started when that was an ancestor.
func cancelReason(t *taskState) string {
	if c := supervise.CauseOf(t.ctx); c != nil {
		return cancelText(c, t.name)
	}
	return "cancelled"
}

func cancelText(c *supervise.Cancelled, task string) string {
	if c.Origin == "" || c.Origin == task {
		return c.Reason
	}
	return "with " + c.Origin + ": " + c.Reason
}

func lineageKey(l []string) string { return strings.Join(l, "\x00") }

// grantCapability gives an attempt its token: the task's (minted for a
// plan task, derived from its parent's attempt for a child) narrowed to the
// attempt's lineage node and wall-clock deadline.
func (r *runner) grantCapability(t *taskState, a *attemptState) error {
	if t.token == nil {
		var err error
		switch {
		case t.parent == nil:
			t.token, err = r.auth.mintTask(t.lineage, t.tmpl, r.s.MaxDepth-t.depth, r.s.Deadline)
		default:
			if err = r.grantCapability(t.parent, &attemptState{}); err == nil {
				ptok := t.parent.token.Attenuate(capability.Lineage(t.lineage[len(t.lineage)-2]))
				t.token, err = deriveChild(ptok, t.name, t.tmpl)
			}
		}
		if err != nil {
			return fmt.Errorf("capability of %s: %w", t.name, err)
		}
	}
	if a.n == 0 { // asked for the task's token only
		return nil
	}
	var expiry time.Time
	if w := a.tmpl.Budget.WallClockS; w > 0 {
		expiry = r.s.now().Add(secondsDur(w) + r.grace() + time.Minute)
	}
	seg := attemptSegment(a.n)
	if a.role == attempt.RoleReconciler {
		seg = "r" + fmt.Sprint(t.reconciles)
	}
	a.lineage = append(append([]string{}, t.lineage...), seg)
	tok := t.token.Attenuate(capability.Lineage(seg))
	if !expiry.IsZero() {
		tok = tok.Attenuate(capability.ExpiresAt(expiry))
	}
	a.token = tok
	return nil
}

func (r *runner) grace() time.Duration {
	if r.s.AgentGrace > 0 {
		return r.s.AgentGrace
	}
	return 5 * time.Second
}

// nodeCancelled runs on the scheduler when a task's node was cancelled (by
// a request, a deadline, an escalation or its parent): its capability is
// revoked (its attempts' model access ends with their contexts, which
// derive from the task's), and a task that is not running is
// finished now with a cancelled receipt (a running one gets it when its
// attempt reports).
func (r *runner) nodeCancelled(t *taskState, c *supervise.Cancelled) {
	if r.runCtx.Err() != nil {
		return
	}
	// Even when its attempt reported first (it is quick to stop now): a
	// cancelled task's capability ends with it.
	if err := r.auth.revoke(t.lineage); err != nil {
		r.s.log.Warn("publishing a revocation", "task_id", t.name, "err", err)
	}
	if t.done() {
		return
	}
	switch t.state {
	case statePending, stateQueued:
		r.finish(t, envelope.StatusCancelled, cancelText(c, t.name), nil, nil)
	case stateBusy:
		// Its candidate waits for an integration that has not started:
		// that will not happen now.
		if len(t.live) == 0 && !r.integratingTask(t.name) && r.dropQueued(t.name) {
			r.finish(t, envelope.StatusCancelled, cancelText(c, t.name), nil, nil)
		}
	}
}

// cancelTask cancels a task's subtree ("" the whole run) and returns the
// tasks it reached. Everything else follows from the tree's hooks.
func (r *runner) cancelTask(name, reason string) ([]*taskState, error) {
	if name != "" && r.tasks[name] == nil {
		return nil, &ControlError{Kind: KindUnknown, Message: fmt.Sprintf("no task %q in run %s", name, r.rec.RunID)}
	}
	// Under integMu: an integration that has not moved the ref yet sees
	// the cancel before it does (see integrate).
	r.integMu.Lock()
	names, err := r.tree.Cancel(name, reason)
	r.integMu.Unlock()
	if err != nil {
		return nil, &ControlError{Kind: KindUnknown, Message: err.Error()}
	}
	r.must(r.st.Emit(Event{Kind: rundir.EvCancelRequested, Task: name, Reason: reason, Tasks: len(names)}))
	var out []*taskState
	for _, n := range names {
		t := r.tasks[n]
		if t == nil || t.done() {
			continue
		}
		// Now, before the answer: the node's hook may run after the task's
		// attempt has reported.
		if err := r.auth.revoke(t.lineage); err != nil {
			r.s.log.Warn("publishing a revocation", "task_id", t.name, "err", err)
		}
		out = append(out, t)
	}
	return out, nil
}

// cancelRequest serves `apiary cancel`: it checks the operator's token,
// cancels, and answers once every task reached has its receipt.
func (r *runner) cancelRequest(ctx context.Context, in CancelRequest) (*CancelResult, error) {
	start := time.Now()
	tok, err := r.auth.verify(in.Operator, capability.Request{Tool: ToolCancel})
	if err != nil || len(tok.Lineage()) != 2 || tok.Lineage()[1] != OperatorSegment {
		return nil, &ControlError{Kind: KindPermission, Message: fmt.Sprintf("an operator token is required: %v", err)}
	}
	reason := in.Reason
	if reason == "" {
		reason = "cancelled by the operator"
	}
	type answer struct {
		ts  []*taskState
		err error
	}
	ch := make(chan answer, 1)
	if !r.call(func() {
		if t := r.tasks[in.Task]; t != nil && t.done() {
			ch <- answer{nil, &ControlError{Kind: KindFinished, Message: fmt.Sprintf("task %s has already finished: %s", t.name, t.receipt.Status),
				Context: map[string]any{"status": string(t.receipt.Status)}}}
			return
		}
		ts, err := r.cancelTask(in.Task, reason)
		ch <- answer{ts, err}
	}) {
		return nil, &ControlError{Kind: KindCancelled, Message: "the run has ended"}
	}
	ans := <-ch
	if ans.err != nil {
		return nil, ans.err
	}
	wait := secondsDur(in.WaitS)
	if wait <= 0 {
		wait = defaultCancelWait
	}
	wctx, stop := context.WithTimeout(ctx, wait)
	defer stop()
	res := &CancelResult{Cancelled: []string{}}
	pending := func(t *taskState, why string) {
		if res.Pending == nil {
			res.Pending = map[string]string{}
		}
		res.Pending[t.name] = why
	}
	for _, t := range ans.ts {
		select {
		case <-t.doneCh:
		case <-r.loopDone:
		case <-wctx.Done():
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		switch st := r.receiptStatus(t); {
		case st == "":
			pending(t, "no receipt yet")
		case st != string(envelope.StatusCancelled):
			if res.Finished == nil {
				res.Finished = map[string]string{}
			}
			res.Finished[t.name] = st
		default:
			// Its receipt comes after its processes are gone; say so if one
			// was left anyway (one that dropped its marker cannot be seen).
			if ps := proc.OwnerProcesses(r.rec.RunID, t.name); len(ps) > 0 {
				pending(t, fmt.Sprintf("%d process(es) still running: %v", len(ps), ps))
				continue
			}
			res.Cancelled = append(res.Cancelled, t.name)
		}
	}
	res.AckMs = float64(time.Since(start).Microseconds()) / 1000
	return res, nil
}

// defaultCancelWait bounds how long a cancel waits for its subtree.
const defaultCancelWait = time.Minute

// receiptStatus is t's receipt's status, read on the scheduler (""
// without one, or once the run has ended and it has none).
func (r *runner) receiptStatus(t *taskState) string {
	ch := make(chan string, 1)
	if r.call(func() {
		if t.receipt != nil {
			ch <- string(t.receipt.Status)
			return
		}
		ch <- ""
	}) {
		return <-ch
	}
	if rc, err := r.st.Task(t.name).Receipt(); err == nil && rc != nil {
		return string(rc.Status)
	}
	return ""
}

// abandon stops counting on a live attempt: its context ends with cause
// (its agent gets SIGTERM, then SIGKILL), its capability and model access
// are revoked and its lease ended. Its result is still collected.
func (r *runner) abandon(t *taskState, la *liveAttempt, cause error) {
	if la.abandoned {
		return
	}
	la.abandoned = true
	a := la.a
	r.leases.Release(t.name, a.fence)
	if err := r.auth.revoke(a.lineage); err != nil {
		r.s.log.Warn("publishing a revocation", "task_id", t.name, "err", err)
	}
	a.stop(cause)
}

// lapsed handles a lease that was not renewed in time: the agent is
// killed and the task runs again elsewhere (a new attempt, with a new
// fencing token) while it has attempts left.
func (r *runner) lapsed(ls supervise.Lease) {
	t := r.tasks[ls.Key]
	if t == nil {
		return
	}
	la := t.live[ls.Fence]
	if la == nil || la.abandoned || t.done() {
		return
	}
	r.must(r.st.Emit(Event{Kind: rundir.EvLeaseLapsed, Task: t.name, Attempt: la.a.n, Fence: ls.Fence, Reason: fmt.Sprintf("not renewed within %s", ls.TTL)}))
	r.abandon(t, la, errLeaseLapsed)
	reason := fmt.Sprintf("attempt %d: its lease (fence %d) lapsed", la.a.n, ls.Fence)
	if t.spec != nil {
		r.specFailed(t, la.a, reason)
		return
	}
	if la.a.role == attempt.RoleReconciler {
		r.retryOrFail(t, reason, nil)
		return
	}
	if t.attempts < r.s.MaxAttempts {
		t.notes = append(t.notes, reason+"; re-run")
		r.enqueue(&job{t: t, role: attempt.RoleWorker})
		return
	}
	r.finish(t, envelope.StatusFailed, reason, nil, nil)
}

// agentHeartbeat renews, on an agent's own request, the lease of the
// attempt that holds the capability.
func (r *runner) agentHeartbeat(text string) error {
	tok, err := r.auth.verify(text, capability.Request{Tool: ToolHeartbeat})
	if err != nil {
		return &ControlError{Kind: KindPermission, Message: err.Error()}
	}
	ref, ok := r.attemptOf(tok)
	if !ok {
		return &ControlError{Kind: KindPermission, Message: "the token names no live attempt"}
	}
	if _, err := r.leases.Renew(ref.task, ref.fence); err != nil {
		return &ControlError{Kind: KindPermission, Message: err.Error(), Context: map[string]any{"reason": "stale_fencing_token"}}
	}
	return nil
}

// attemptOf finds the live attempt a token was issued to: the longest
// prefix of its lineage that names one (an agent may narrow its token
// further before passing it on).
func (r *runner) attemptOf(tok *capability.Token) (attemptRef, bool) {
	lin := tok.Lineage()[1:]
	r.refMu.Lock()
	defer r.refMu.Unlock()
	for n := len(lin); n > 0; n-- {
		if ref, ok := r.refs[lineageKey(lin[:n])]; ok {
			return ref, true
		}
	}
	return attemptRef{}, false
}

// superviseFailure applies t's supervision group to its failure. It
// returns true when the task is being restarted (no receipt now); false
// when it fails for good (it is in no group, or the group escalated).
func (r *runner) superviseFailure(t *taskState, reason string) bool {
	if r.sup.GroupOf(t.name) == "" || t.ctx.Err() != nil || r.runCtx.Err() != nil {
		return false
	}
	active := func(name string) bool {
		o := r.tasks[name]
		return o != nil && !o.done()
	}
	d := r.sup.Failed(t.name, r.s.now(), active)
	if d.Escalate {
		r.must(r.st.Emit(Event{Kind: rundir.EvEscalated, Task: t.name, Reason: d.Reason}))
		for _, name := range d.Stop {
			_, _ = r.tree.Cancel(name, "escalated: "+d.Reason)
		}
		// The group's parent is the run: its root has no strategy, so the
		// run stops (Erlang's semantics for a supervisor past its intensity).
		_, _ = r.tree.Cancel("", "escalated: "+d.Reason)
		return false
	}
	for _, name := range d.Restart {
		o := r.tasks[name]
		why := fmt.Sprintf("%s (after %s failed: %s)", d.Reason, t.name, attempt.Clip(reason, 200))
		r.must(r.st.Emit(Event{Kind: rundir.EvRestarted, Task: name, Reason: why}))
		o.notes = append(o.notes, "restarted: "+why)
		r.restartMember(o)
	}
	return true
}

// restartMember makes a group's restart of o the only work of o that
// counts: its live attempts are abandoned (agents stopped, capabilities
// revoked), its candidates waiting for or held by the integrator go stale
// with their leases (the integrator refuses them and nothing re-runs for
// them; one already past the integrator's last fencing check, in its
// compare-and-swap, lands and is not undone), and o is queued again
// unless it is still waiting to start.
func (r *runner) restartMember(o *taskState) {
	for _, la := range o.live {
		r.abandon(o, la, errRestart)
	}
	for _, req := range r.queue {
		if req.a.task == o.name {
			req.stale = true
		}
	}
	for _, req := range r.inflight {
		if req.a.task == o.name {
			req.stale = true
		}
	}
	for _, ls := range r.leases.Live(o.name) {
		r.leases.Release(o.name, ls.Fence)
	}
	o.spec = nil
	if o.state != stateQueued && o.state != statePending {
		r.enqueue(&job{t: o, role: attempt.RoleWorker})
	}
}

// afterDone releases what a finished task held and lets its parent know.
func (r *runner) afterDone(t *taskState) {
	if t.hedge != nil {
		t.hedge.Stop()
		t.hedge = nil
	}
	for _, la := range t.live {
		r.abandon(t, la, errTaskOver)
	}
	for _, ls := range r.leases.Live(t.name) {
		r.leases.Release(t.name, ls.Fence)
	}
	t.node.Finish()
	t.budget.Close()
	if t.flow != nil {
		t.flow.Close()
	}
	close(t.doneCh)
	p := t.parent
	if !t.dynamic || p == nil {
		return
	}
	for i, k := range p.kids {
		if k == t {
			p.kids = append(p.kids[:i], p.kids[i+1:]...)
			break
		}
	}
	if p.flow != nil {
		p.flow.Consumed()
	}
	if len(p.kids) == 0 && p.afterKids != nil {
		fn := p.afterKids
		p.afterKids = nil
		fn()
	}
}
