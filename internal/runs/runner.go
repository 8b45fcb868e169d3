package runs

import (
	"container/heap"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// runner executes one run. Its fields belong to the scheduler goroutine
// (the one calling execute) unless noted.
type runner struct {
	s        *settings
	st       *rundir.Log // safe for concurrent use
	rec      *rundir.Record
	plan     *plan.Plan
	repo     *git.Repo            // the main working tree's top directory; safe for concurrent use
	wt       *rundir.WorktreeLock // serializes worktree-list commands; safe for concurrent use
	ref      string               // refs/heads/<integration branch>
	profiles map[string]agent.Profile
	maxPar   int

	// runCtx is the run's context, the root of every task's; abort cancels
	// it (fatal records the cause when the run's state cannot be written).
	// Ending it interrupts the run (to be resumed); cancelling the tree's
	// root cancels its tasks (they get receipts).
	runCtx context.Context
	abort  context.CancelCauseFunc
	fatal  error

	// Supervision; the pointers are set once and safe for concurrent use.
	tree       *supervise.Tree
	leases     *supervise.Leases
	sup        *supervise.Supervisor
	auth       *authority
	escrow     *EscrowQueue
	durations  supervise.Durations // wall times of passing worker attempts
	ctl        *controlServer
	inbox      chan func()   // work for the scheduler goroutine, see do
	loopDone   chan struct{} // closed when the scheduler loop has ended
	refMu      sync.Mutex
	refs       map[string]attemptRef // attempt lineage → attempt, for the control socket
	bg         sync.WaitGroup        // lease watch, reaper, escrow prompts
	hooks      map[string]string     // agents' git environment (escrowed pushes)
	noDeadline context.CancelFunc    // releases the tree root's deadline

	tasks       map[string]*taskState
	list        []*taskState // registration order
	ready       jobHeap
	kidsReady   jobHeap // dynamic children: outside max_parallel
	running     int
	runningKids int
	queue       []*integRequest // waiting for the integrator
	busy        bool            // the integrator holds a request
	integrating *integRequest   // that request
	attemptCh   chan *attemptResult
	wg          sync.WaitGroup // attempt goroutines and the integrator
}

// attemptRef identifies a live attempt to the control socket's handlers.
type attemptRef struct {
	task    string
	n       int
	fence   uint64
	lineage []string
	token   *capability.Token
}

// newRunner prepares a run under ctx; the caller must call execute, which
// releases the run's context.
func newRunner(ctx context.Context, s *settings, st *rundir.Log, rec *rundir.Record, p *plan.Plan, repo *git.Repo) (*runner, error) {
	r := &runner{s: s, st: st, rec: rec, plan: p, repo: repo, ref: "refs/heads/" + rec.IntegrationBranch,
		tasks: map[string]*taskState{}, attemptCh: make(chan *attemptResult), profiles: map[string]agent.Profile{},
		wt: rundir.NewWorktreeLock(repo.Dir()), inbox: make(chan func(), 64), loopDone: make(chan struct{}), refs: map[string]attemptRef{}}
	r.runCtx, r.abort = context.WithCancelCause(ctx)
	root := r.runCtx
	if !s.Deadline.IsZero() {
		root, r.noDeadline = context.WithDeadlineCause(root, s.Deadline, &supervise.Cancelled{Reason: "the run's deadline passed"})
	}
	r.tree = supervise.NewTree(root)
	r.leases = supervise.NewLeases(s.now, 0)
	r.escrow = NewEscrowQueue(repo.Dir(), s.now)
	fail := func(err error) (*runner, error) {
		r.abort(nil)
		return nil, err
	}
	var groups []supervise.GroupSpec
	for _, g := range p.Groups {
		groups = append(groups, supervise.GroupSpec{Name: g.Name, Strategy: supervise.Strategy(g.Strategy), MaxRestarts: g.MaxRestarts,
			Within: secondsDur(g.WithinS), Members: g.Tasks})
	}
	var err error
	if r.sup, err = supervise.NewSupervisor(groups); err != nil {
		return fail(fmt.Errorf("%w: %v", ErrConfig, err))
	}
	key := s.CapabilityKey
	if key == nil {
		if key, err = LoadKey(repo.Dir(), true, s.rnd); err != nil {
			return fail(fmt.Errorf("capability key: %w", err))
		}
	}
	if r.auth, err = newAuthority(repo.Dir(), rec.RunID, key, s.ModelHosts, s.now); err != nil {
		return fail(err)
	}
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
		return fail(fmt.Errorf("%w: reconcile agent %q is not a profile of the plan", ErrUnknownAgent, ra))
	}
	return r, nil
}

// do hands fn to the scheduler goroutine; false once the loop has ended
// (fn then never runs). Safe to call from any goroutine.
func (r *runner) do(fn func()) bool {
	select {
	case r.inbox <- fn:
		return true
	case <-r.loopDone:
		return false
	}
}

// addTask registers a task; its context derives from its parent's, and
// its node hooks cancellation (revocation, receipts of waiting tasks).
func (r *runner) addTask(name, id string, parent *taskState, depth int, tmpl *envelope.Envelope, prio float64) *taskState {
	t := &taskState{name: name, id: id, parent: parent, depth: depth, tmpl: tmpl, prio: prio, order: len(r.list),
		live: map[uint64]*liveAttempt{}, doneCh: make(chan struct{})}
	pname := ""
	t.lineage = []string{name}
	if parent != nil {
		pname = parent.name
		t.lineage = append(append(slices.Clone(parent.lineage), attemptSegment(max(parent.attempts, 1))), name)
	}
	n, err := r.tree.Add(pname, name, time.Time{})
	if err != nil { // a name already in the tree: run under the root
		n, _ = r.tree.Add("", name+"~"+strconv.Itoa(len(r.list)), time.Time{})
	}
	t.node, t.ctx = n, n.Context()
	t.budget = supervise.NewBudget(unitsOf(tmpl.Budget))
	n.OnCancel(func(c *supervise.Cancelled) { r.do(func() { r.nodeCancelled(t, c) }) })
	r.tasks[name] = t
	r.list = append(r.list, t)
	return t
}

// registerPlan adds the plan's tasks.
func (r *runner) registerPlan() {
	bl := r.plan.BottomLevels()
	for _, pt := range r.plan.Tasks {
		r.addTask(pt.ID, r.rec.Tasks[pt.ID], nil, 0, pt.Template(), bl[pt.ID])
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
		r.enqueue(&job{t: t, role: attempt.RoleWorker})
	}
}

// execute runs the scheduler loop until every task is done or ctx ends,
// then records the end of the run. It returns only infrastructure errors.
func (r *runner) execute() error {
	ctx := r.runCtx
	defer r.abort(nil)
	if r.noDeadline != nil {
		defer r.noDeadline()
	}
	r.hooks = r.installHooks()
	if cs, err := r.serveControl(); err != nil {
		r.s.log.Warn("no control socket: apiary spawn and apiary cancel will not reach this run", "err", err)
	} else {
		r.ctl = cs
	}
	bgCtx, bgCancel := context.WithCancel(ctx)
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		r.leases.Watch(bgCtx, func(ls supervise.Lease) { r.do(func() { r.lapsed(ls) }) })
	}()
	if r.s.ReapInterval > 0 {
		r.bg.Add(1)
		go func() {
			defer r.bg.Done()
			supervise.Every(bgCtx, r.s.ReapInterval, r.reapOthers, func(err error) {
				r.s.log.Warn("reaper", "err", err)
			})
		}()
	}
	in, out := make(chan *integRequest), make(chan *integResult)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.integrator(ctx, in, out)
	}()
	for {
		r.dispatch(ctx)
		stopped := ctx.Err() != nil
		idle := r.ready.Len() == 0 && r.kidsReady.Len() == 0
		if r.running == 0 && !r.busy && (len(r.queue) == 0 || stopped) && (idle || stopped) {
			break
		}
		var send chan<- *integRequest
		var next *integRequest
		if !r.busy && len(r.queue) > 0 && !stopped {
			if next = r.queue[0]; r.dropCancelled(next) {
				r.queue = r.queue[1:]
				continue
			}
			send = in
		}
		select {
		case res := <-r.attemptCh:
			r.running--
			if res.a.dynamic {
				r.runningKids--
			}
			r.onAttempt(ctx, res)
		case send <- next:
			r.queue = r.queue[1:]
			r.busy, r.integrating = true, next
		case res := <-out:
			r.busy, r.integrating = false, nil
			r.onIntegrated(ctx, res)
		case fn := <-r.inbox:
			fn()
		}
	}
	close(r.loopDone)
	if r.ctl != nil {
		r.ctl.stop()
	}
	bgCancel()
	r.bg.Wait()
	close(in)
	r.wg.Wait()
	return r.wrapUp(ctx)
}

// dropCancelled finishes, instead of integrating, a candidate whose task
// was cancelled while it waited for the integrator.
func (r *runner) dropCancelled(req *integRequest) bool {
	t := r.tasks[req.a.task]
	if req.stale || t.ctx.Err() == nil || r.runCtx.Err() != nil || t.done() {
		return false
	}
	r.finish(t, envelope.StatusCancelled, cancelReason(t.ctx), nil, nil)
	return true
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
	if status == "failed" && r.tree.Root().Err() != nil && r.runCtx.Err() == nil {
		status = "cancelled"
	}
	r.syncCheckout(ctx)
	ev := Event{Kind: rundir.EvRunFinished, Status: status}
	if cause := context.Cause(ctx); cause != nil {
		ev.Reason = cause.Error()
	} else if c := supervise.CauseOf(r.tree.Root()); c != nil {
		ev.Reason = c.Error()
	}
	if err := r.st.Emit(ev); err != nil && r.fatal == nil {
		r.fatal = err
	}
	return r.fatal
}

// must stops the run when recording its state fails.
func (r *runner) must(err error) {
	if err != nil && r.fatal == nil {
		r.fatal = fmt.Errorf("recording the run's state: %w", err)
		r.abort(r.fatal)
	}
}

// syncCheckout moves the main checkout's files along when it has the
// integration branch checked out (the run moved that branch by update-ref).
func (r *runner) syncCheckout(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attempt.CleanupTimeout)
	defer cancel()
	if b, err := r.repo.CurrentBranch(cctx); err != nil || b != r.rec.IntegrationBranch {
		return
	}
	// Under the lock, so that of two runs ending together the later one
	// syncs to the later head.
	var head string
	err := r.wt.Do(func() error {
		var err error
		if head, err = r.repo.RevParse(cctx, r.ref); err != nil {
			return err
		}
		return r.repo.SyncWorktree(cctx, head)
	})
	if err != nil {
		r.s.log.Warn("the checkout of the integration branch could not be updated", "err", err)
		_ = r.st.Emit(Event{Kind: rundir.EvCheckoutSynced, Reason: err.Error()})
		return
	}
	_ = r.st.Emit(Event{Kind: rundir.EvCheckoutSynced, Commit: head})
}

// dispatch starts ready jobs while workers are free; dynamic children
// start at once (their producers' credit windows bound them).
func (r *runner) dispatch(ctx context.Context) {
	for ctx.Err() == nil {
		var j *job
		switch {
		case r.kidsReady.Len() > 0:
			j = heap.Pop(&r.kidsReady).(*job)
		case r.running-r.runningKids < r.maxPar && r.ready.Len() > 0:
			j = heap.Pop(&r.ready).(*job)
		default:
			return
		}
		t := j.t
		if t.done() || j.spec && !t.specOpen() {
			continue
		}
		if t.ctx.Err() != nil {
			if len(t.live) == 0 {
				r.finish(t, envelope.StatusCancelled, cancelReason(t.ctx), nil, nil)
			}
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
		r.must(r.st.Emit(Event{Kind: rundir.EvAttemptStarted, Task: t.name, Attempt: a.n, Role: a.role, Base: head, Fence: a.fence, Trace: a.trace,
			Agent: a.profileName, Model: a.profile.Model}))
		r.running++
		if a.dynamic {
			r.runningKids++
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.attemptCh <- r.runAttempt(a)
		}()
	}
}

func branchName(run, task string) string { return "apiary/" + run + "/" + task }

// newAttempt prepares the next attempt of a job on head: its lease and
// fencing token, its capability, its worktree and branch.
func (r *runner) newAttempt(j *job, head string) (*attemptState, error) {
	t := j.t
	ttl := secondsDur(t.tmpl.LeaseS)
	if ttl <= 0 {
		ttl = secondsDur(plan.DefaultLeaseS)
	}
	holder := fmt.Sprintf("%s attempt %d", t.name, t.attempts+1)
	ls, err := r.leases.Grant(t.name, holder, ttl)
	if err != nil {
		return nil, err
	}
	t.fence = ls.Fence
	t.state = stateBusy
	if t.started.IsZero() {
		t.started = r.s.now()
	}
	trace, err := rundir.Traceparent(r.rec.TraceID, r.s.rnd)
	if err != nil {
		r.leases.Release(t.name, ls.Fence)
		return nil, err
	}
	a := &attemptState{run: r.rec.RunID, task: t.name, taskID: t.id, role: j.role, fence: ls.Fence, base: head,
		tmpl: t.tmpl, trace: trace, profileName: t.tmpl.Agent.Profile, lease: ttl, dynamic: t.dynamic, spec: j.spec}
	if j.profile != "" {
		a.profileName = j.profile
	}
	dir := r.st.Task(t.name).Dir()
	suffix := ""
	if j.role == attempt.RoleWorker {
		t.attempts++
		a.n = t.attempts
		a.branch = branchName(a.run, t.name)
		if len(t.live) > 0 || j.spec { // another attempt of the task may hold the plain branch
			a.branch += "." + strconv.Itoa(a.n)
		}
		a.envPath = filepath.Join(dir, "envelope.json")
		if j.spec || a.n > 1 {
			a.envPath = filepath.Join(dir, "envelope-"+strconv.Itoa(a.n)+".json")
		}
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
	if !slices.Contains(t.branches, a.branch) {
		t.branches = append(t.branches, a.branch)
	}
	t.logs = append(t.logs, filepath.Base(a.logPath))
	a.worktree = r.st.Worktree(t.name, a.n, suffix)
	if j.role == attempt.RoleReconciler && t.reconciles > 1 {
		a.worktree = r.st.Worktree(t.name, a.n, suffix+strconv.Itoa(t.reconciles))
	}
	a.home = a.worktree + ".home"
	p, ok := r.profiles[a.profileName]
	if !ok {
		r.leases.Release(t.name, ls.Fence)
		return nil, fmt.Errorf("%w: %q", ErrUnknownAgent, a.profileName)
	}
	a.profile = p
	if err := r.grantCapability(t, a); err != nil {
		r.leases.Release(t.name, ls.Fence)
		return nil, err
	}
	a.ctx, a.stop = context.WithCancelCause(t.ctx)
	a.budget = budgetOf(t.budget.Remaining(), t.budget.Limited(), a.tmpl.Budget)
	if j.role == attempt.RoleReconciler {
		a.budget = a.tmpl.Budget
	}
	t.live[a.fence] = &liveAttempt{a: a}
	r.refMu.Lock()
	r.refs[lineageKey(a.lineage)] = attemptRef{task: t.name, n: a.n, fence: a.fence, lineage: a.lineage, token: a.token}
	r.refMu.Unlock()
	if j.role == attempt.RoleWorker {
		r.armSpeculation(t, a, j)
	}
	return a, nil
}

// onAttempt handles the end of an attempt.
func (r *runner) onAttempt(ctx context.Context, res *attemptResult) {
	a := res.a
	t := r.tasks[a.task]
	la := t.live[a.fence]
	delete(t.live, a.fence)
	r.refMu.Lock()
	delete(r.refs, lineageKey(a.lineage))
	r.refMu.Unlock()
	ev := Event{Kind: rundir.EvAttemptFinished, Task: t.name, Attempt: a.n, Role: a.role, Commit: res.candidate, Usage: &res.usage, Fence: a.fence}
	if res.err == nil && !res.interrupted {
		ev.Exit = &res.exit
	}
	if res.err != nil {
		ev.Reason = res.err.Error()
	}
	r.must(r.st.Emit(ev))
	t.usage.Add(res.usage)
	if over := t.budget.Charge(unitsOfUsage(res.usage)); over != (supervise.Units{}) {
		t.notes = append(t.notes, fmt.Sprintf("attempt %d spent beyond the task's budget (over by %s)", a.n, unitsText(over)))
	}
	if res.report != nil && res.report.Text != "" {
		t.report = res.report.Text
	}
	if la == nil || la.abandoned || t.done() {
		r.superseded(a, res)
		return
	}
	queued := false
	defer func() {
		if !queued {
			r.leases.Release(t.name, a.fence)
		}
	}()
	if res.interrupted {
		switch {
		case ctx.Err() != nil:
			t.state = stateInterrupted
		case len(t.live) > 0:
			// another attempt of the task carries on (or reports the cancel)
		default:
			r.finish(t, envelope.StatusCancelled, cancelReason(t.ctx), nil, nil)
		}
		return
	}
	if a.spec && t.spec != nil {
		queued = r.specResult(t, a, res)
		return
	}
	fail := func(reason string, fs []gate.Failure) {
		if a.role == attempt.RoleReconciler {
			r.retryOrFail(t, "reconciliation failed: "+reason, fs)
			return
		}
		r.finish(t, envelope.StatusFailed, reason, fs, nil)
	}
	if why := res.failure(); why != "" {
		fail(why, nil)
		return
	}
	if a.role == attempt.RoleWorker && res.candidate != "" {
		t.base, t.candidate, t.changes = a.base, res.candidate, res.changes
	}
	if len(res.failures) > 0 {
		first, _ := gateReasons(res.failures)
		r.must(r.st.Emit(Event{Kind: rundir.EvGateRejected, Task: t.name, Attempt: a.n, Role: a.role, Gate: first}))
		fail("rejected: "+res.failures[0].Error(), res.failures)
		return
	}
	if a.role == attempt.RoleWorker {
		r.durations.Observe(secondsDur(res.usage.WallS))
		r.keepChildren(t, a, res.children)
	}
	if res.candidate == "" {
		if a.role == attempt.RoleReconciler {
			fail("the reconciler changed nothing", nil)
			return
		}
		t.base, t.candidate, t.changes = a.base, "", nil
		r.succeed(t, a.base, "", nil)
		return
	}
	r.queueIntegration(t, a, res)
	queued = true
}

// failure says why an attempt's agent failed; "" if it did not.
func (res *attemptResult) failure() string {
	a := res.a
	switch {
	case res.err != nil:
		return res.err.Error()
	case res.timedOut:
		return fmt.Sprintf("the wall_clock_s budget (%gs) ran out", a.tmpl.Budget.WallClockS)
	case res.exit != 0:
		why := fmt.Sprintf("the agent exited with status %d", res.exit)
		if res.signal != "" {
			why += " (" + res.signal + ")"
		}
		return why
	}
	return ""
}
