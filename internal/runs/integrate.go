package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// integRequest asks the integrator to integrate one candidate.
type integRequest struct {
	a         *attemptState // the attempt that made the candidate
	base      string        // the commit the candidate's change is relative to
	candidate string
	changes   []git.Change // base..candidate
	// original is, for a reconciliation, the task's own candidate: the
	// second parent of the reconciled merge.
	original string
	checks   []string
	timeout  float64
	// stale: the scheduler abandoned the attempt; the request is expected
	// to fail its fencing check.
	stale bool
	// ctx is its task's context, set when its integration starts.
	ctx context.Context
}

// Outcomes of an integration.
const (
	outIntegrated = iota
	outRejected   // a check failed on the tree being integrated
	outConflict   // overlapping writes or a textual conflict
	outStale      // fencing token older than the task's latest
	outCancelled  // the task was cancelled before the ref moved
	outError      // infrastructure failure (or the run was interrupted)
)

type integResult struct {
	req      *integRequest
	outcome  int
	commit   string
	kind     string
	head     string // the integration head the outcome was computed on
	checks   []envelope.CheckResult
	failures []gate.Failure
	paths    []string // outConflict: the overlapping or conflicting paths
	retries  int      // CAS failures recomputed
	err      error
}

// Integration runs candidates through their checks in parallel and moves
// the integration ref one at a time. The scheduler starts an integration
// (startIntegrations) for the oldest waiting candidate whose changes are
// independent of every one in flight, while fewer than maxChecks are
// running checks. Each merges onto the head, runs its checks on the tree
// it would commit and then, holding integMu, makes sure its task was not
// cancelled and its fencing token is still live, and moves the ref by
// compare-and-swap from the head its checks saw. So the ref moves in the
// order checks pass, and a short check never waits behind a long one.
//
// When another integration moves the ref, the tree a candidate is checking
// is not the one it would commit: its checks are stopped at once and it
// merges onto the new head and checks again. Those re-checks take turns
// (recheck: one at a time, outside the maxChecks slots, shortest checks
// first, a shorter one preempting a longer one), so N candidates that
// finish together cost about 2N checks rather than N²/2, a short re-check
// never waits behind a long one, and a long one starts over as soon as the
// short ones have landed. Every commit the
// run puts on the branch passed its task's checks on exactly its tree. A
// cancel takes integMu too, so it either finds the task's work on the
// branch already or keeps it off.

// startIntegrations hands waiting candidates to integration goroutines,
// oldest first, while fewer than maxChecks run; a candidate whose task or
// changed paths overlap one in flight waits for it to settle.
func (r *runner) startIntegrations(out chan<- *integResult) {
	for i := 0; i < len(r.queue) && int(r.checking.Load()) < r.maxChecks; {
		req := r.queue[i]
		if r.dropCancelled(req) {
			r.queue = slices.Delete(r.queue, i, i+1)
			continue
		}
		if r.blocked(req) {
			i++
			continue
		}
		r.queue = slices.Delete(r.queue, i, i+1)
		r.inflight = append(r.inflight, req)
		req.ctx = r.tasks[req.a.task].ctx
		r.checking.Add(1)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.checking.Add(-1)
			if err := r.fenced(req); err != nil {
				out <- &integResult{req: req, outcome: outStale, err: err}
				return
			}
			out <- r.integrate(req.ctx, req)
		}()
	}
}

// blocked reports whether req must wait for an integration in flight: one
// of the same task, or one whose changes touch the same paths (one of the
// two would conflict once the other lands).
func (r *runner) blocked(req *integRequest) bool {
	for _, f := range r.inflight {
		if f.a.task == req.a.task || len(overlap(f.changes, req.changes)) > 0 {
			return true
		}
	}
	return false
}

// settled removes a finished integration from the ones in flight.
func (r *runner) settled(req *integRequest) {
	if i := slices.Index(r.inflight, req); i >= 0 {
		r.inflight = slices.Delete(r.inflight, i, i+1)
	}
}

// dropQueued removes the waiting (not started) integrations of task and
// reports whether there were any.
func (r *runner) dropQueued(task string) bool {
	n := len(r.queue)
	r.queue = slices.DeleteFunc(r.queue, func(q *integRequest) bool { return q.a.task == task && !q.stale })
	return len(r.queue) < n
}

func (r *runner) integratingTask(task string) bool {
	return slices.ContainsFunc(r.inflight, func(q *integRequest) bool { return q.a.task == task })
}

// fenced checks a request's fencing token against its task's leases: an
// attempt whose lease lapsed, lost a race or was superseded is refused,
// however its result looks.
func (r *runner) fenced(req *integRequest) error {
	if err := r.leases.Check(req.a.task, req.a.fence); err != nil {
		live := r.leases.Live(req.a.task)
		cur := uint64(0)
		if len(live) > 0 {
			cur = live[len(live)-1].Fence
		}
		return fmt.Errorf("%w: attempt %d holds fence %d, the task's live lease is %d: %v", ErrStaleFence, req.a.n, req.a.fence, cur, err)
	}
	return nil
}

// integrate runs the optimistic-concurrency loop for one candidate: compute
// the commit to put on head, check it, and CAS the ref from head; if the
// ref moved, start over on the new head.
func (r *runner) integrate(ctx context.Context, req *integRequest) *integResult {
	res := &integResult{req: req}
	failed := func(err error) *integResult {
		res.outcome, res.err = outError, err
		if ctx.Err() != nil && r.runCtx.Err() == nil {
			res.outcome = outCancelled
		}
		return res
	}
	external := 0               // moves of the ref by someone other than this run
	var checkTime time.Duration // the longest its checks were seen to run
	checkKnown := false         // they ran to their end once
	hold := ctx                 // the recheck turn's context, while it is held
	holding := false
	defer func() {
		if holding {
			r.recheck.release()
		}
	}()
	for try := 0; ; try++ {
		if try > 0 && !holding {
			// Checking again takes turns, outside the maxChecks slots (the
			// scheduler is told one is free).
			r.checking.Add(-1)
			r.do(func() {})
			h, err := r.recheck.acquire(ctx, checkTime, checkKnown)
			r.checking.Add(1)
			if err != nil {
				return failed(err)
			}
			hold, holding = h, true
		}
		moves := r.refMoves() // before the head is read: a later move ends the checks
		head, err := r.repo.RevParse(ctx, r.ref)
		if err != nil {
			return failed(err)
		}
		res.head = head
		target, kind, paths, err := r.mergeOnto(ctx, req, head)
		switch {
		case err != nil:
			return failed(err)
		case paths != nil:
			res.outcome, res.paths = outConflict, paths
			return res
		}
		if len(req.checks) > 0 {
			t0 := time.Now()
			rep, stale, err := checkUntilMoved(ctx, hold, moves, func(cctx context.Context) (*gate.Report, error) {
				return r.checkCommit(cctx, req, head, target, try)
			})
			took := time.Since(t0)
			switch {
			case !stale && (!checkKnown || took > checkTime):
				checkTime, checkKnown = took, true
			case !checkKnown:
				checkTime = max(checkTime, took)
			}
			if stale {
				// Another integration landed (these checks were of a tree
				// that will not be committed), or a shorter re-check needs
				// the turn: start over on the head, taking turns.
				res.retries++
				if holding {
					r.recheck.release()
					hold, holding = ctx, false
				}
				continue
			}
			if err != nil {
				return failed(err)
			}
			res.checks = rep.Checks
			if !rep.Passed() {
				if ctx.Err() != nil {
					return failed(context.Cause(ctx))
				}
				res.outcome, res.failures = outRejected, rep.Failures
				return res
			}
		}
		if r.s.beforeRefUpdate != nil {
			r.s.beforeRefUpdate(req.a.task)
		}
		r.integMu.Lock()
		// Right before the side effect, under the lock a cancel takes too:
		// a task cancelled, or a lease that ended, while the checks ran
		// must not move the branch.
		if ctx.Err() != nil {
			r.integMu.Unlock()
			return failed(context.Cause(ctx))
		}
		if err := r.fenced(req); err != nil {
			r.integMu.Unlock()
			res.outcome, res.err = outStale, err
			return res
		}
		err = r.repo.UpdateRef(context.WithoutCancel(ctx), r.ref, target, head, "apiary: integrate "+req.a.task+" ("+kind+")")
		if err == nil {
			r.refMoved()
		}
		r.integMu.Unlock()
		if errors.Is(err, git.ErrRefMoved) {
			res.retries++
			var moved *git.RefMovedError
			errors.As(err, &moved)
			_ = r.st.Emit(Event{Kind: rundir.EvCASRetry, Task: req.a.task, Attempt: req.a.n, Base: head, Commit: moved.Actual})
			if !r.movedByRun(ctx, head, moved.Actual) {
				external++
			}
			if external >= r.s.MaxCASRetries {
				res.outcome, res.err = outError, fmt.Errorf("integration ref kept moving (%d tries): %w", try+1, err)
				return res
			}
			continue
		}
		if err != nil {
			res.outcome, res.err = outError, err
			return res
		}
		res.outcome, res.commit, res.kind = outIntegrated, target, kind
		return res
	}
}

// movedByRun reports whether every commit between from and to on the
// first-parent chain is one of this run's integrations: the run raced
// itself, which does not count against MaxCASRetries.
func (r *runner) movedByRun(ctx context.Context, from, to string) bool {
	log, err := r.repo.FirstParentLog(context.WithoutCancel(ctx), from, to)
	if err != nil || len(log) == 0 {
		return false
	}
	for _, e := range log {
		if run, _ := git.TrailerValue(e.Trailers, git.TrailerRun); run != r.rec.RunID {
			return false
		}
	}
	return true
}

// mergeOnto computes the commit that integrates req onto head. It returns
// the conflicting paths (non-nil) instead when the candidate's writes
// overlap the branch's since base or do not merge cleanly.
func (r *runner) mergeOnto(ctx context.Context, req *integRequest, head string) (target, kind string, conflict []string, err error) {
	reconcile := req.original != ""
	if head == req.base && !reconcile {
		return req.candidate, attempt.FastForward, nil, nil
	}
	if head != req.base {
		theirs, err := r.repo.DiffNameStatus(ctx, req.base, head)
		if err != nil {
			return "", "", nil, err
		}
		if ov := overlap(req.changes, theirs); len(ov) > 0 {
			return "", "", ov, nil
		}
	}
	mr, err := r.repo.MergeTree(ctx, head, req.candidate, git.MergeTreeOptions{})
	if err != nil {
		return "", "", nil, err
	}
	if !mr.Clean {
		return "", "", append([]string{}, mr.Conflicts...), nil
	}
	second, kind := req.candidate, attempt.Merge
	if reconcile {
		second, kind = req.original, attempt.Reconciled
	}
	subject := fmt.Sprintf("apiary: integrate %s (%s)", req.a.task, kind)
	msg, err := git.Message(subject, attempt.FirstLine(req.a.tmpl.Objective), req.a.trailers(kind))
	if err != nil {
		return "", "", nil, err
	}
	sig := git.Signature{Name: "apiary", Email: "apiary@localhost", When: r.s.now()}
	c, err := r.repo.CommitTree(ctx, mr.Tree, []string{head, second}, msg, sig, git.Signature{})
	return c, kind, nil, err
}

// checkCommit runs the task's checks on target in a scratch worktree.
func (r *runner) checkCommit(ctx context.Context, req *integRequest, head, target string, try int) (*gate.Report, error) {
	suffix := ".check-" + strconv.Itoa(try)
	if req.a.role == attempt.RoleReconciler {
		suffix = ".reconcile-check-" + strconv.Itoa(try)
	}
	return r.runChecks(ctx, req.a, head, target, suffix, req.checks, req.timeout)
}

func secondsDur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// queueIntegration hands an attempt's candidate to the integrator.
func (r *runner) queueIntegration(t *taskState, a *attemptState, res *attemptResult) {
	req := &integRequest{a: a, base: a.base, candidate: res.candidate, changes: res.changes,
		checks: t.tmpl.Completion.Checks, timeout: t.tmpl.Completion.CheckTimeoutS}
	if a.role == attempt.RoleReconciler {
		req.original = t.candidate
	}
	r.queue = append(r.queue, req)
}

// superseded handles the result of an attempt the scheduler abandoned (its
// lease lapsed, it lost a race or a restart, or its task is over). Its
// candidate, if it made one that passed its static gates, still goes to the
// integrator — like a paused worker waking up and trying to integrate — and
// the integrator refuses its stale fencing token.
func (r *runner) superseded(a *attemptState, res *attemptResult) {
	if res.candidate == "" || res.failure() != "" || len(res.failures) > 0 {
		return
	}
	r.queue = append(r.queue, &integRequest{a: a, base: a.base, candidate: res.candidate, changes: res.changes,
		checks: a.tmpl.Completion.Checks, timeout: a.tmpl.Completion.CheckTimeoutS, stale: true})
}

// onIntegrated handles the integrator's verdict.
func (r *runner) onIntegrated(ctx context.Context, res *integResult) {
	a := res.req.a
	t := r.tasks[a.task]
	r.leases.Release(t.name, a.fence)
	if res.outcome == outStale {
		r.must(r.st.Emit(Event{Kind: rundir.EvFenceRejected, Task: t.name, Attempt: a.n, Role: a.role, Fence: a.fence, Commit: res.req.candidate, Reason: res.err.Error()}))
		r.s.log.Warn("stale candidate refused", "task_id", t.name, "attempt", a.n, "err", res.err)
		if res.req.stale || t.done() {
			return
		}
		if t.ctx.Err() != nil {
			r.finish(t, envelope.StatusCancelled, cancelReason(t), nil, nil)
			return
		}
		r.retryOrFail(t, "its lease ended before it was integrated", nil)
		return
	}
	if res.req.stale && res.outcome == outIntegrated && !t.done() {
		// It passed the last fencing check just before its lease ended (a
		// restart or a lost race in that instant): its work is on the
		// branch and cannot be taken back, so the task is done with it.
		r.must(r.st.Emit(Event{Kind: rundir.EvIntegrated, Task: t.name, Attempt: a.n, Role: a.role, Commit: res.commit, Integrated: res.kind, Fence: a.fence}))
		r.succeed(t, res.commit, res.kind, res.checks)
		return
	}
	if res.req.stale || t.done() {
		return
	}
	switch res.outcome {
	case outCancelled:
		r.finish(t, envelope.StatusCancelled, cancelReason(t), nil, res.checks)
	case outError:
		if ctx.Err() != nil {
			t.state = stateInterrupted
			return
		}
		r.finish(t, envelope.StatusFailed, "integration: "+res.err.Error(), nil, nil)
	case outRejected:
		first, _ := gateReasons(res.failures)
		r.must(r.st.Emit(Event{Kind: rundir.EvGateRejected, Task: t.name, Attempt: a.n, Role: a.role, Gate: first}))
		if a.role == attempt.RoleReconciler {
			r.retryOrFail(t, "the reconciled result failed its checks", res.failures)
			return
		}
		r.finishChecked(t, res.failures, res.checks)
	case outConflict:
		r.must(r.st.Emit(Event{Kind: rundir.EvConflict, Task: t.name, Attempt: a.n, Role: a.role, Base: res.head, Paths: res.paths}))
		if a.role == attempt.RoleReconciler {
			r.retryOrFail(t, "the reconciled result conflicts with the integration branch again", nil)
			return
		}
		r.enqueue(&job{t: t, role: attempt.RoleReconciler, base: t.base, candidate: t.candidate, changes: t.changes})
	case outIntegrated:
		r.must(r.st.Emit(Event{Kind: rundir.EvIntegrated, Task: t.name, Attempt: a.n, Role: a.role, Commit: res.commit, Integrated: res.kind, Fence: a.fence}))
		r.succeed(t, res.commit, res.kind, res.checks)
	}
}

// retryOrFail re-runs a task on the new head after its reconciliation
// failed, while it has attempts left.
func (r *runner) retryOrFail(t *taskState, reason string, fs []gate.Failure) {
	if t.attempts < r.s.MaxAttempts {
		t.spec = nil
		t.notes = append(t.notes, fmt.Sprintf("attempt %d: %s; re-run on the new head", t.attempts, reason))
		r.enqueue(&job{t: t, role: attempt.RoleWorker})
		return
	}
	r.finish(t, envelope.StatusFailed, reason, fs, nil)
}
