package runs

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/proc"
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
	// procs contains every process the run starts (agents, checks); safe
	// for concurrent use.
	procs *proc.Tracker

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
	queue       []*integRequest // waiting for their integration to start
	inflight    []*integRequest // being integrated (see startIntegrations)
	maxChecks   int
	checking    atomic.Int32 // integrations running checks, at most maxChecks
	recheck     turn         // the turn to check again after the ref moved
	movedMu     sync.Mutex
	movedCh     chan struct{} // closed when this run moves the ref (see refMoves)
	// integMu is held for the last checks before a ref update and the
	// update, and by a cancel (see integrate); safe for concurrent use.
	integMu   sync.Mutex
	attemptCh chan *attemptResult
	wg        sync.WaitGroup // attempt and integration goroutines

	// The run's worktree pool, opened by the first attempt (after a
	// resume has cleaned up what the last process left); safe for
	// concurrent use.
	poolOnce sync.Once
	pool     *git.WorktreePool
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
	if r.procs, err = proc.New(proc.Options{Owner: rec.RunID, Env: map[string]string{"APIARY_RUN_ID": rec.RunID},
		NoCgroup: s.ProcessGroups, Rand: s.rnd}); err != nil {
		return fail(err)
	}
	r.maxPar = s.MaxParallel
	if r.maxPar == 0 {
		r.maxPar = rec.Options.MaxParallel
	}
	if r.maxPar == 0 {
		r.maxPar = p.MaxParallel
	}
	r.maxChecks = s.MaxParallelChecks
	if r.maxChecks <= 0 {
		r.maxChecks = max(r.maxPar, 1)
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

// call runs fn on the scheduler goroutine and returns once it has run;
// false if the loop ended first (fn then never runs). Safe to call from
// any goroutine but the scheduler's.
func (r *runner) call(fn func()) bool {
	done := make(chan struct{})
	if !r.do(func() { fn(); close(done) }) {
		return false
	}
	// The inbox is buffered: fn may still be in it when the loop ends.
	select {
	case <-done:
		return true
	case <-r.loopDone:
		select {
		case <-done:
			return true
		default:
			return false
		}
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
	out := make(chan *integResult)
	for {
		r.dispatch(ctx)
		stopped := ctx.Err() != nil
		if !stopped {
			r.startIntegrations(out)
		}
		idle := r.ready.Len() == 0 && r.kidsReady.Len() == 0
		if r.running == 0 && len(r.inflight) == 0 && (len(r.queue) == 0 || stopped) && (idle || stopped) {
			break
		}
		select {
		case res := <-r.attemptCh:
			r.running--
			if res.a.dynamic {
				r.runningKids--
			}
			r.onAttempt(ctx, res)
		case res := <-out:
			r.settled(res.req)
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
	r.wg.Wait()
	r.closePool()
	// Its worktrees are gone: so is their directory, unless one was left.
	_ = os.Remove(rundir.State(r.repo.Dir(), "worktrees", r.rec.RunID))
	return r.wrapUp(ctx)
}

// dropCancelled finishes, instead of integrating, a candidate whose task
// was cancelled while it waited for the integrator.
func (r *runner) dropCancelled(req *integRequest) bool {
	t := r.tasks[req.a.task]
	if req.stale || t.ctx.Err() == nil || r.runCtx.Err() != nil || t.done() {
		return false
	}
	r.finish(t, envelope.StatusCancelled, cancelReason(t), nil, nil)
	return true
}

// wrapUp records how the run ended and brings the main checkout along.
func (r *runner) wrapUp(ctx context.Context) error {
	// A run whose tasks all succeeded but for cancelled ones (and those
	// skipped after them) was cancelled, not failed.
	status := "succeeded"
	failed := false
	for _, t := range r.list {
		switch {
		case !t.done():
			status = "interrupted"
		case !t.succeeded():
			failed = failed || t.receipt.Status == envelope.StatusFailed
			if status == "succeeded" {
				status = "cancelled"
			}
		}
	}
	if status == "cancelled" && failed && (r.tree.Root().Err() == nil || r.runCtx.Err() != nil) {
		status = "failed"
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
			r.finish(t, envelope.StatusCancelled, cancelReason(t), nil, nil)
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
		t.notes = append(t.notes, "its agent changed nothing: there was nothing to integrate")
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
