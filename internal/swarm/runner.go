package swarm

import (
	"container/heap"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
)

// runner executes one run. Its fields belong to the scheduler goroutine
// (the one calling execute) unless noted.
type runner struct {
	s        *settings
	st       *store // safe for concurrent use
	rec      *RunRecord
	plan     *plan.Plan
	repo     *git.Repo // the main working tree's top directory; safe for concurrent use
	wt       *gitLock  // serializes worktree-list commands; safe for concurrent use
	ref      string    // refs/heads/<integration branch>
	profiles map[string]agent.Profile
	maxPar   int

	// runCtx is the run's context, the root of every task's; abort cancels
	// it (fatal records the cause when the run's state cannot be written).
	runCtx context.Context
	abort  context.CancelCauseFunc
	fatal  error

	tasks     map[string]*taskState
	list      []*taskState // registration order
	ready     jobHeap
	running   int
	queue     []*integRequest // waiting for the integrator
	busy      bool            // the integrator holds a request
	fence     uint64          // the last fencing token issued
	attemptCh chan *attemptResult
	wg        sync.WaitGroup // attempt goroutines and the integrator
}

// newRunner prepares a run under ctx; the caller must call execute, which
// releases the run's context.
func newRunner(ctx context.Context, s *settings, st *store, rec *RunRecord, p *plan.Plan, repo *git.Repo) (*runner, error) {
	r := &runner{s: s, st: st, rec: rec, plan: p, repo: repo, ref: "refs/heads/" + rec.IntegrationBranch,
		tasks: map[string]*taskState{}, attemptCh: make(chan *attemptResult), profiles: map[string]agent.Profile{},
		wt: newGitLock(repo.Dir())}
	r.runCtx, r.abort = context.WithCancelCause(ctx)
	r.maxPar = s.MaxParallel
	if r.maxPar == 0 {
		r.maxPar = rec.Options.MaxParallel
	}
	if r.maxPar == 0 {
		r.maxPar = p.MaxParallel
	}
	for name, a := range p.Agents {
		r.profiles[name] = s.profile(name, a)
	}
	if ra := rec.Options.ReconcileAgent; ra != "" && r.profiles[ra].Kind == "" {
		r.abort(nil)
		return nil, fmt.Errorf("%w: reconcile agent %q is not a profile of the plan", ErrUnknownAgent, ra)
	}
	return r, nil
}

// templateOf turns a plan task into its envelope template.
func templateOf(pt *plan.Task) *envelope.Envelope {
	return &envelope.Envelope{
		Objective: pt.Objective,
		Inputs:    envelope.Inputs{Paths: pt.Inputs},
		Authority: envelope.Authority{WriteScope: pt.WriteScope, Network: envelope.NetworkGateway},
		Budget:    pt.Budget,
		Completion: envelope.Completion{Checks: pt.Checks, CheckTimeoutS: pt.CheckTimeoutS,
			Forbidden: pt.Forbidden, Sealed: pt.Sealed},
		Deps:   pt.Deps,
		Agent:  envelope.AgentRef{Profile: pt.Agent},
		LeaseS: pt.LeaseS,
		Tags:   pt.Tags,
	}
}

// addTask registers a task; its context derives from its parent's.
func (r *runner) addTask(name, id string, parent *taskState, depth int, tmpl *envelope.Envelope, prio float64) *taskState {
	pctx := r.runCtx
	if parent != nil {
		pctx = parent.ctx
	}
	t := &taskState{name: name, id: id, parent: parent, depth: depth, tmpl: tmpl, prio: prio, order: len(r.list)}
	t.ctx, t.cancel = context.WithCancel(pctx)
	r.tasks[name] = t
	r.list = append(r.list, t)
	return t
}

// registerPlan adds the plan's tasks.
func (r *runner) registerPlan() {
	bl := r.plan.BottomLevels()
	for _, pt := range r.plan.Tasks {
		r.addTask(pt.ID, r.rec.Tasks[pt.ID], nil, 0, templateOf(pt), bl[pt.ID])
	}
}

// wire links a pending task to its dependencies and queues it when none
// blocks; a done data dependency that failed skips it.
func (r *runner) wire(t *taskState) {
	for _, d := range t.tmpl.Deps {
		dep := r.tasks[d.Task]
		if dep == nil {
			continue
		}
		if dep.done() {
			if !satisfied(dep, d.Kind) {
				r.finish(t, envelope.StatusSkipped, "dependency "+dep.name+" did not succeed", nil, nil)
				return
			}
			continue
		}
		dep.succ = append(dep.succ, edge{to: t, kind: d.Kind})
		t.waiting++
	}
	if t.waiting == 0 {
		r.enqueue(&job{t: t, role: RoleWorker})
	}
}

// execute runs the scheduler loop until every task is done or ctx ends,
// then records the end of the run. It returns only infrastructure errors.
func (r *runner) execute() error {
	ctx := r.runCtx
	defer r.abort(nil)
	in, out := make(chan *integRequest), make(chan *integResult)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.integrator(ctx, in, out)
	}()
	for {
		r.dispatch(ctx)
		stopped := ctx.Err() != nil
		if r.running == 0 && !r.busy && (len(r.queue) == 0 || stopped) && (r.ready.Len() == 0 || stopped) {
			break
		}
		var send chan<- *integRequest
		var next *integRequest
		if !r.busy && len(r.queue) > 0 && !stopped {
			send, next = in, r.queue[0]
		}
		select {
		case res := <-r.attemptCh:
			r.running--
			r.onAttempt(ctx, res)
		case send <- next:
			r.queue = r.queue[1:]
			r.busy = true
		case res := <-out:
			r.busy = false
			r.onIntegrated(ctx, res)
		}
	}
	close(in)
	r.wg.Wait()
	return r.wrapUp(ctx)
}

// wrapUp records how the run ended and brings the main checkout along.
func (r *runner) wrapUp(ctx context.Context) error {
	status := "succeeded"
	for _, t := range r.list {
		switch {
		case !t.done():
			status = "interrupted"
		case !t.succeeded() && status == "succeeded":
			status = "failed"
		}
	}
	r.syncCheckout(ctx)
	ev := Event{Kind: EvRunFinished, Status: status}
	if cause := context.Cause(ctx); cause != nil {
		ev.Reason = cause.Error()
	}
	if err := r.st.emit(ev); err != nil && r.fatal == nil {
		r.fatal = err
	}
	return r.fatal
}

// must stops the run when recording its state fails.
func (r *runner) must(err error) {
	if err != nil && r.fatal == nil {
		r.fatal = fmt.Errorf("swarm: recording the run's state: %w", err)
		r.abort(r.fatal)
	}
}

// syncCheckout moves the main checkout's files along when it has the
// integration branch checked out (the run moved that branch by update-ref).
func (r *runner) syncCheckout(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if b, err := r.repo.CurrentBranch(cctx); err != nil || b != r.rec.IntegrationBranch {
		return
	}
	// Under the lock, so that of two runs ending together the later one
	// syncs to the later head.
	var head string
	err := r.wt.do(func() error {
		var err error
		if head, err = r.repo.RevParse(cctx, r.ref); err != nil {
			return err
		}
		return r.repo.SyncWorktree(cctx, head)
	})
	if err != nil {
		r.s.log.Warn("the checkout of the integration branch could not be updated", "err", err)
		_ = r.st.emit(Event{Kind: EvCheckoutSynced, Reason: err.Error()})
		return
	}
	_ = r.st.emit(Event{Kind: EvCheckoutSynced, Commit: head})
}

// dispatch starts ready jobs while workers are free.
func (r *runner) dispatch(ctx context.Context) {
	for r.running < r.maxPar && r.ready.Len() > 0 && ctx.Err() == nil {
		j := heap.Pop(&r.ready).(*job)
		t := j.t
		if t.ctx.Err() != nil {
			r.finish(t, envelope.StatusCancelled, "cancelled: "+context.Cause(t.ctx).Error(), nil, nil)
			continue
		}
		head, err := r.repo.RevParse(ctx, r.ref)
		if err != nil {
			if ctx.Err() != nil {
				t.state = stateInterrupted
				return
			}
			r.finish(t, envelope.StatusFailed, "reading the integration head: "+err.Error(), nil, nil)
			continue
		}
		a, err := r.newAttempt(j, head)
		if err != nil {
			r.finish(t, envelope.StatusFailed, err.Error(), nil, nil)
			continue
		}
		r.must(r.st.emit(Event{Kind: EvAttemptStarted, Task: t.name, Attempt: a.n, Role: a.role, Base: head, Fence: a.fence}))
		r.running++
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.attemptCh <- r.runAttempt(a)
		}()
	}
}

func branchName(run, task string) string { return "apiary/" + run + "/" + task }

// newAttempt prepares the next attempt of a job on head.
func (r *runner) newAttempt(j *job, head string) (*attempt, error) {
	t := j.t
	r.fence++
	t.fence = r.fence
	t.state = stateBusy
	if t.started.IsZero() {
		t.started = r.s.now()
	}
	trace, err := traceparent(r.rec.TraceID, r.s.rnd)
	if err != nil {
		return nil, err
	}
	a := &attempt{run: r.rec.RunID, task: t.name, taskID: t.id, role: j.role, fence: r.fence, base: head,
		ctx: t.ctx, tmpl: t.tmpl, trace: trace, profileName: t.tmpl.Agent.Profile}
	dir := r.st.taskDir(t.name)
	suffix := ""
	if j.role == RoleWorker {
		t.attempts++
		a.n = t.attempts
		a.branch = branchName(a.run, t.name)
		a.envPath = filepath.Join(dir, "envelope.json")
		a.logPath = filepath.Join(dir, "attempt-"+strconv.Itoa(a.n)+".log")
	} else {
		t.reconciles++
		a.n = t.attempts
		suffix = ".reconcile"
		a.branch = branchName(a.run, t.name) + suffix
		a.envPath = filepath.Join(dir, "reconcile-"+strconv.Itoa(a.n)+".envelope.json")
		a.logPath = filepath.Join(dir, "reconcile-"+strconv.Itoa(a.n)+".log")
		a.origBase, a.origCandidate, a.origChanges = j.base, j.candidate, j.changes
		if ra := r.rec.Options.ReconcileAgent; ra != "" {
			a.profileName = ra
		}
		rt := *t.tmpl
		rt.Objective = fmt.Sprintf("Reconcile task %q's change with the integration branch. The task's objective: %s", t.name, t.tmpl.Objective)
		rt.Budget = r.s.reconcileBudget(t.tmpl.Budget)
		a.tmpl = &rt
	}
	t.logs = append(t.logs, filepath.Base(a.logPath))
	a.worktree = r.st.worktree(t.name, a.n, suffix)
	a.home = a.worktree + ".home"
	p, ok := r.profiles[a.profileName]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownAgent, a.profileName)
	}
	a.profile = p
	return a, nil
}

// onAttempt handles the end of an attempt.
func (r *runner) onAttempt(ctx context.Context, res *attemptResult) {
	a := res.a
	t := r.tasks[a.task]
	ev := Event{Kind: EvAttemptFinished, Task: t.name, Attempt: a.n, Role: a.role, Commit: res.candidate, Usage: &res.usage}
	if res.err == nil && !res.interrupted {
		ev.Exit = &res.exit
	}
	if res.err != nil {
		ev.Reason = res.err.Error()
	}
	r.must(r.st.emit(ev))
	addUsage(&t.usage, res.usage)
	if res.report != nil && res.report.Text != "" {
		t.report = res.report.Text
	}
	if res.interrupted {
		if ctx.Err() != nil {
			t.state = stateInterrupted
			return
		}
		r.finish(t, envelope.StatusCancelled, "cancelled: "+context.Cause(t.ctx).Error(), nil, nil)
		return
	}
	fail := func(reason string, fs []gate.Failure) {
		if a.role == RoleReconciler {
			r.retryOrFail(t, "reconciliation failed: "+reason, fs)
			return
		}
		r.finish(t, envelope.StatusFailed, reason, fs, nil)
	}
	switch {
	case res.err != nil:
		fail(res.err.Error(), nil)
		return
	case res.timedOut:
		fail(fmt.Sprintf("the wall_clock_s budget (%gs) ran out", a.tmpl.Budget.WallClockS), nil)
		return
	case res.exit != 0:
		why := fmt.Sprintf("the agent exited with status %d", res.exit)
		if res.signal != "" {
			why += " (" + res.signal + ")"
		}
		fail(why, nil)
		return
	}
	if a.role == RoleWorker && res.candidate != "" {
		t.base, t.candidate, t.changes = a.base, res.candidate, res.changes
	}
	if len(res.failures) > 0 {
		first, _ := gateReasons(res.failures)
		r.must(r.st.emit(Event{Kind: EvGateRejected, Task: t.name, Attempt: a.n, Role: a.role, Gate: first}))
		fail("rejected: "+res.failures[0].Error(), res.failures)
		return
	}
	if a.role == RoleWorker {
		r.keepChildren(t, a, res.children)
	}
	if res.candidate == "" {
		if a.role == RoleReconciler {
			fail("the reconciler changed nothing", nil)
			return
		}
		t.base, t.candidate, t.changes = a.base, "", nil
		r.succeed(t, a.base, "", nil)
		return
	}
	req := &integRequest{a: a, base: a.base, candidate: res.candidate, changes: res.changes,
		checks: t.tmpl.Completion.Checks, timeout: t.tmpl.Completion.CheckTimeoutS}
	if a.role == RoleReconciler {
		req.original = t.candidate
	}
	r.queue = append(r.queue, req)
}

// keepChildren validates the child envelopes of a worker attempt and keeps
// the accepted ones (on disk and on the task) until the task succeeds.
func (r *runner) keepChildren(t *taskState, a *attempt, files []childFile) {
	kids, notes := r.acceptChildren(t, files)
	t.children = nil
	for _, n := range notes {
		t.notes = append(t.notes, n)
		r.must(r.st.emit(Event{Kind: EvChildRefused, Parent: t.name, Reason: n}))
	}
	for _, k := range kids {
		e := *k.env
		e.Inputs.Workspace = "git:" + a.base
		if err := writeEnvelope(filepath.Join(r.st.taskDir(t.name), k.file), &e, true); err != nil {
			t.notes = append(t.notes, fmt.Sprintf("child %s refused: %v", k.name, err))
			continue
		}
		t.children = append(t.children, k)
	}
}

// onIntegrated handles the integrator's verdict.
func (r *runner) onIntegrated(ctx context.Context, res *integResult) {
	a := res.req.a
	t := r.tasks[a.task]
	switch res.outcome {
	case outStale:
		r.s.log.Warn("stale candidate refused", "task_id", t.name, "err", res.err)
	case outError:
		if ctx.Err() != nil {
			t.state = stateInterrupted
			return
		}
		r.finish(t, envelope.StatusFailed, "integration: "+res.err.Error(), nil, nil)
	case outRejected:
		first, _ := gateReasons(res.failures)
		r.must(r.st.emit(Event{Kind: EvGateRejected, Task: t.name, Attempt: a.n, Role: a.role, Gate: first}))
		if a.role == RoleReconciler {
			r.retryOrFail(t, "the reconciled result failed its checks", res.failures)
			return
		}
		r.finishChecked(t, res.failures, res.checks)
	case outConflict:
		r.must(r.st.emit(Event{Kind: EvConflict, Task: t.name, Attempt: a.n, Role: a.role, Base: res.head, Paths: res.paths}))
		if a.role == RoleReconciler {
			r.retryOrFail(t, "the reconciled result conflicts with the integration branch again", nil)
			return
		}
		r.enqueue(&job{t: t, role: RoleReconciler, base: t.base, candidate: t.candidate, changes: t.changes})
	case outIntegrated:
		r.must(r.st.emit(Event{Kind: EvIntegrated, Task: t.name, Attempt: a.n, Role: a.role, Commit: res.commit, Integrated: res.kind}))
		r.succeed(t, res.commit, res.kind, res.checks)
	}
}

// retryOrFail re-runs a task on the new head after its reconciliation
// failed, while it has attempts left.
func (r *runner) retryOrFail(t *taskState, reason string, fs []gate.Failure) {
	if t.attempts < r.s.MaxAttempts {
		t.notes = append(t.notes, fmt.Sprintf("attempt %d: %s; re-run on the new head", t.attempts, reason))
		r.enqueue(&job{t: t, role: RoleWorker})
		return
	}
	r.finish(t, envelope.StatusFailed, reason, fs, nil)
}
