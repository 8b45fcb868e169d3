package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// spawn serves apiary.spawn and `apiary spawn`: a running attempt asks for
// a child task. The caller is identified by its capability, which must
// allow the spawn tool one level down (its depth caveat); the child's
// depth is at most MaxDepth; the parent's credit window must have room
// (else the call waits: credit-based flow control); the child's budget is
// carved from the parent's (at most SpawnAlpha of what is left) and its
// capability derived from the parent attempt's (never wider). The child
// runs at once, concurrently with its parent, from the integration head;
// the parent is not done before it is. With Wait the answer carries the
// child's receipt.
func (r *runner) spawn(ctx context.Context, in SpawnRequest) (*SpawnResult, error) {
	tok, err := r.auth.verify(in.Capability, capability.Request{Tool: ToolSpawn})
	if err != nil {
		return nil, permissionError(err)
	}
	ref, ok := r.attemptOf(tok)
	if !ok {
		return nil, &ControlError{Kind: KindPermission, Message: "the capability names no live attempt of this run",
			Context: map[string]any{"reason": "stale_fencing_token"}}
	}
	// One level down: the token's depth caveat must allow it.
	if _, err := r.auth.verify(in.Capability, capability.Request{Tool: ToolSpawn, Depth: 1}); err != nil {
		_ = r.st.Emit(Event{Kind: rundir.EvChildRefused, Parent: ref.task, Reason: err.Error()})
		return nil, permissionError(err)
	}
	e, err := envelope.DecodeEnvelope(in.Envelope)
	if err != nil {
		return nil, &ControlError{Kind: KindInvalid, Message: "child envelope: " + err.Error()}
	}
	// The credit: waits while the parent's window is full.
	type flowAns struct {
		f     *supervise.Flow
		pctx  context.Context
		depth int
	}
	fc := make(chan flowAns, 1)
	if !r.call(func() {
		t := r.tasks[ref.task]
		if t.flow == nil {
			t.flow = supervise.NewFlow(int64(r.s.SpawnWindow))
		}
		fc <- flowAns{t.flow, t.ctx, t.depth}
	}) {
		return nil, &ControlError{Kind: KindCancelled, Message: "the run has ended"}
	}
	fa := <-fc
	if fa.depth+1 > r.s.MaxDepth {
		_ = r.st.Emit(Event{Kind: rundir.EvChildRefused, Parent: ref.task, Reason: fmt.Sprintf("%v: depth %d exceeds %d", ErrChildDepth, fa.depth+1, r.s.MaxDepth)})
		return nil, &ControlError{Kind: KindPermission, Message: fmt.Sprintf("a child of %s would be at depth %d; max_depth is %d", ref.task, fa.depth+1, r.s.MaxDepth),
			Context: map[string]any{"reason": "depth_exceeded", "max_depth": r.s.MaxDepth}}
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(fa.pctx, stop)() // the parent's cancellation ends the wait
	if err := fa.f.Emit(wctx); err != nil {
		return nil, &ControlError{Kind: KindCancelled, Message: "waiting for a spawn credit: " + err.Error()}
	}
	type ans struct {
		c   *taskState
		res *SpawnResult
		err error
	}
	ch := make(chan ans, 1)
	if !r.call(func() {
		c, res, err := r.acceptSpawn(ref, e)
		ch <- ans{c, res, err}
	}) {
		fa.f.Consumed()
		return nil, &ControlError{Kind: KindCancelled, Message: "the run has ended"}
	}
	a := <-ch
	if a.err != nil {
		fa.f.Consumed()
		return nil, a.err
	}
	if !in.Wait {
		return a.res, nil
	}
	select {
	case <-a.c.doneCh:
	case <-r.loopDone:
		return nil, &ControlError{Kind: KindCancelled, Message: "the run ended before the child " + a.c.name}
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	b, err := os.ReadFile(r.st.Task(a.c.name).ReceiptPath())
	if err != nil {
		return nil, err
	}
	a.res.Receipt = json.RawMessage(b)
	return a.res, nil
}

// permissionError types a capability failure for the control socket.
func permissionError(err error) *ControlError {
	reason := "capability_denied"
	var ce *capability.CaveatError
	switch {
	case errors.As(err, &ce) && ce.Caveat.Kind() == capability.KindDepth:
		reason = "depth_exceeded"
	case errors.Is(err, capability.ErrRevoked):
		reason = "revoked"
	case errors.Is(err, capability.ErrExpired):
		reason = "expired"
	case errors.Is(err, capability.ErrMalformed), errors.Is(err, capability.ErrBadSignature):
		reason = "invalid_capability"
	}
	return &ControlError{Kind: KindPermission, Message: err.Error(), Context: map[string]any{"reason": reason}}
}

// acceptSpawn validates a spawned child against its parent attempt and
// registers it; it runs on the scheduler goroutine.
func (r *runner) acceptSpawn(ref attemptRef, e *envelope.Envelope) (*taskState, *SpawnResult, error) {
	parent := r.tasks[ref.task]
	la := parent.live[ref.fence]
	if parent.done() || la == nil || la.abandoned {
		return nil, nil, &ControlError{Kind: KindPermission, Message: fmt.Sprintf("attempt %d of %s no longer holds its lease", ref.n, ref.task),
			Context: map[string]any{"reason": "stale_fencing_token"}}
	}
	refuse := func(err error) (*taskState, *SpawnResult, error) {
		kind := KindInvalid
		switch {
		case errors.Is(err, ErrChildBudget):
			kind = KindBudget
		case errors.Is(err, ErrChildScope), errors.Is(err, ErrChildDepth), errors.Is(err, capability.ErrWiden), errors.Is(err, capability.ErrDepth):
			kind = KindPermission
		}
		r.must(r.st.Emit(Event{Kind: rundir.EvChildRefused, Parent: parent.name, Reason: err.Error()}))
		return nil, nil, &ControlError{Kind: kind, Message: err.Error()}
	}
	name := e.Name
	if name == "" {
		name = parent.name + "-" + strconv.Itoa(len(r.list)+1)
	}
	depth := parent.depth + 1
	switch {
	case depth > r.s.MaxDepth:
		return refuse(fmt.Errorf("%w: depth %d exceeds %d", ErrChildDepth, depth, r.s.MaxDepth))
	case !taskNamePattern.MatchString(name) || r.tasks[name] != nil:
		return refuse(fmt.Errorf("%w: %q", ErrChildName, name))
	case r.profiles[e.Agent.Profile].Kind == "":
		return refuse(fmt.Errorf("%w: %q", ErrChildAgent, e.Agent.Profile))
	}
	if bad := outsideScope(e.Authority.WriteScope, parent.tmpl.Authority.WriteScope); bad != "" {
		return refuse(fmt.Errorf("%w: %q is not inside %v", ErrChildScope, bad, parent.tmpl.Authority.WriteScope))
	}
	var deps []envelope.Dep
	for _, d := range e.Deps {
		if d.Task == parent.name {
			continue // it runs alongside its parent
		}
		if r.tasks[d.Task] == nil {
			return refuse(fmt.Errorf("%w: %q", ErrChildDeps, d.Task))
		}
		deps = append(deps, d)
	}
	kb, b, err := childBudget(parent.budget, parent.tmpl.Budget, r.s.SpawnAlpha, e.Budget)
	if err != nil {
		return refuse(err)
	}
	c := *e
	c.Budget, c.Deps, c.Depth = b, deps, depth
	tok, err := deriveChild(la.a.token, name, &c)
	if err != nil {
		kb.Close()
		return refuse(err)
	}
	id, err := envelope.NewTaskID(r.s.now(), r.s.rnd)
	if err != nil {
		kb.Close()
		return refuse(err)
	}
	c.TaskID, c.ParentID, c.RunID, c.Name = id, parent.id, r.rec.RunID, name
	c.Completion.Sealed = union(c.Completion.Sealed, parent.tmpl.Completion.Sealed)
	c.Completion.Forbidden = union(forbiddenOf(c.Completion.Forbidden), forbiddenOf(parent.tmpl.Completion.Forbidden))
	c.Completion.Checks = union(parent.tmpl.Completion.Checks, c.Completion.Checks)
	if c.Completion.CheckTimeoutS == 0 {
		c.Completion.CheckTimeoutS = parent.tmpl.Completion.CheckTimeoutS
	}
	if c.LeaseS == 0 {
		c.LeaseS = parent.tmpl.LeaseS
	}
	if c.Authority.Network == "" {
		c.Authority.Network = parent.tmpl.Authority.Network
	}
	c.Trace, c.Reconcile, c.Inputs.Workspace = nil, nil, "git:"+la.a.base
	file := rundir.ChildName(name)
	if err := rundir.WriteEnvelope(r.st.Task(parent.name).ChildPath(name), &c, true); err != nil {
		kb.Close()
		return refuse(err)
	}
	tmpl := c
	tmpl.Inputs.Workspace = ""
	kid := r.addTask(name, id, parent, depth, &tmpl, parent.prio+1)
	kid.dynamic = true
	kid.lineage = append(append([]string{}, la.a.lineage...), name)
	kid.token, kid.budget = tok, kb
	parent.kids = append(parent.kids, kid)
	parent.spawned = append(parent.spawned, file)
	parent.notes = append(parent.notes, fmt.Sprintf("spawned %s (depth %d)", name, depth))
	r.must(r.st.Emit(Event{Kind: rundir.EvChildAdded, Task: name, Parent: parent.name, Attempt: ref.n, Reason: "spawned by a running attempt"}))
	r.wire(kid)
	bj, _ := json.Marshal(b)
	return kid, &SpawnResult{Task: name, TaskID: id, Depth: depth, Budget: bj}, nil
}
