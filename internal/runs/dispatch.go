package runs

// Dispatch: starting ready jobs on free workers, each attempt with its
// fencing token, capability, worktree and branch.

import (
	"container/heap"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
)

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
				r.finish(t, envelope.StatusCancelled, cancelReason(t), nil, nil)
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
	td := r.st.Task(t.name)
	suffix := ""
	if j.role == attempt.RoleWorker {
		t.attempts++
		a.n = t.attempts
		a.branch = branchName(a.run, t.name)
		if len(t.live) > 0 || j.spec { // another attempt of the task may hold the plain branch
			a.branch += "." + strconv.Itoa(a.n)
		}
		a.envPath = td.EnvelopePath()
		if j.spec || a.n > 1 {
			a.envPath = td.AttemptEnvelopePath(a.n)
		}
		a.logPath = td.LogPath(a.n)
	} else {
		t.reconciles++
		a.n = t.attempts
		suffix = ".reconcile"
		a.branch = branchName(a.run, t.name) + suffix
		a.envPath = td.ReconcileEnvelopePath(a.n)
		a.logPath = td.ReconcileLogPath(a.n)
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
