package swarm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
)

// Integration kinds, as in receipts.
const (
	FastForward = "fast-forward"
	Merge       = "merge"
	Reconciled  = "reconciled"
)

// integRequest asks the integrator to integrate one candidate.
type integRequest struct {
	a         *attempt // the attempt that made the candidate
	base      string   // the commit the candidate's change is relative to
	candidate string
	changes   []git.Change // base..candidate
	// original is, for a reconciliation, the task's own candidate: the
	// second parent of the reconciled merge.
	original string
	checks   []string
	timeout  float64
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
// so only by compare-and-swap.
func (r *runner) integrator(ctx context.Context, in <-chan *integRequest, out chan<- *integResult) {
	fences := map[string]uint64{} // task → highest fencing token integrated
	for req := range in {
		if f := fences[req.a.task]; req.a.fence < f {
			out <- &integResult{req: req, outcome: outStale, err: fmt.Errorf("%w: %d < %d", ErrStaleFence, req.a.fence, f)}
			continue
		}
		res := r.integrate(ctx, req)
		if res.outcome == outIntegrated {
			fences[req.a.task] = req.a.fence
		}
		out <- res
	}
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
		err = r.repo.UpdateRef(ctx, r.ref, target, head, "apiary: integrate "+req.a.task+" ("+kind+")")
		if errors.Is(err, git.ErrRefMoved) {
			res.retries++
			var moved *git.RefMovedError
			errors.As(err, &moved)
			_ = r.st.emit(Event{Kind: EvCASRetry, Task: req.a.task, Attempt: req.a.n, Base: head, Commit: moved.Actual})
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
		return req.candidate, FastForward, nil, nil
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
	second, kind := req.candidate, Merge
	if reconcile {
		second, kind = req.original, Reconciled
	}
	subject := fmt.Sprintf("apiary: integrate %s (%s)", req.a.task, kind)
	msg, err := git.Message(subject, firstLine(req.a.tmpl.Objective), req.a.trailers(kind))
	if err != nil {
		return "", "", nil, err
	}
	sig := git.Signature{Name: "apiary", Email: "apiary@localhost", When: r.s.now()}
	c, err := r.repo.CommitTree(ctx, mr.Tree, []string{head, second}, msg, sig, git.Signature{})
	return c, kind, nil, err
}

// checkCommit runs the task's checks on target in a scratch worktree.
func (r *runner) checkCommit(ctx context.Context, req *integRequest, head, target string, try int) (*gate.Report, error) {
	a := req.a
	scratch := r.st.worktree(a.task, a.n, ".check-"+strconv.Itoa(try))
	if a.role == RoleReconciler {
		scratch = r.st.worktree(a.task, a.n, ".reconcile-check-"+strconv.Itoa(try))
	}
	if err := r.st.emit(Event{Kind: EvWorktree, Task: a.task, Attempt: a.n, Path: scratch}); err != nil {
		return nil, err
	}
	if err := r.wt.do(func() error { return r.repo.WorktreeAddDetached(ctx, scratch, target) }); err != nil {
		return nil, fmt.Errorf("scratch worktree: %w", err)
	}
	defer r.removeWorktree(ctx, a.task, scratch)
	logDir := filepath.Join(r.st.taskDir(a.task), "checks", filepath.Base(scratch)[len(a.task)+1:])
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	spec := gate.Spec{WriteScope: []string{"."}, Forbidden: []string{}, Checks: req.checks,
		CheckTimeout: secondsDur(req.timeout), LogDir: logDir, Now: r.s.now}
	return gate.Run(ctx, spec, gate.Candidate{Repo: r.repo, Base: head, Commit: target, Dir: scratch})
}

func secondsDur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
