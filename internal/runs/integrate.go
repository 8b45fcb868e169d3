package runs

import (
	"context"
	"errors"
	"fmt"
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
}

// Outcomes of an integration.
const (
	outIntegrated = iota
	outRejected   // a check failed on the tree being integrated
	outConflict   // overlapping writes or a textual conflict
	outStale      // fencing token older than the task's latest
	outError      // infrastructure failure (or the run was cancelled)
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

// integrator integrates requests one at a time until in is closed. It is
// the only goroutine of the run that moves the integration ref, and it does
// so only by compare-and-swap, and only for a request whose fencing token
// is its task's live lease (see fenced).
func (r *runner) integrator(ctx context.Context, in <-chan *integRequest, out chan<- *integResult) {
	for req := range in {
		if err := r.fenced(req); err != nil {
			out <- &integResult{req: req, outcome: outStale, err: err}
			continue
		}
		out <- r.integrate(ctx, req)
	}
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
	for try := 0; ; try++ {
		head, err := r.repo.RevParse(ctx, r.ref)
		if err != nil {
			res.outcome, res.err = outError, err
			return res
		}
		res.head = head
		target, kind, paths, err := r.mergeOnto(ctx, req, head)
		switch {
		case err != nil:
			res.outcome, res.err = outError, err
			return res
		case paths != nil:
			res.outcome, res.paths = outConflict, paths
			return res
		}
		if len(req.checks) > 0 {
			rep, err := r.checkCommit(ctx, req, head, target, try)
			if err != nil {
				res.outcome, res.err = outError, err
				return res
			}
			res.checks = rep.Checks
			if !rep.Passed() {
				res.outcome, res.failures = outRejected, rep.Failures
				return res
			}
		}
		// The fencing check right before the side effect: a lease that
		// ended while the checks ran must not move the branch.
		if err := r.fenced(req); err != nil {
			res.outcome, res.err = outStale, err
			return res
		}
		err = r.repo.UpdateRef(ctx, r.ref, target, head, "apiary: integrate "+req.a.task+" ("+kind+")")
		if errors.Is(err, git.ErrRefMoved) {
			res.retries++
			var moved *git.RefMovedError
			errors.As(err, &moved)
			_ = r.st.Emit(Event{Kind: rundir.EvCASRetry, Task: req.a.task, Attempt: req.a.n, Base: head, Commit: moved.Actual})
			if try+1 >= r.s.MaxCASRetries {
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
			r.finish(t, envelope.StatusCancelled, cancelReason(t.ctx), nil, nil)
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
