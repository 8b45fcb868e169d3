package runs

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// receiptOf starts a task's receipt from what the scheduler knows.
func (r *runner) receiptOf(t *taskState, status envelope.Status, reason string) *envelope.Receipt {
	rc := &envelope.Receipt{
		TaskID: t.id, RunID: r.rec.RunID, Name: t.name, Attempt: t.attempts, Status: status,
		Reason: attempt.Clip(reason, 1024), Base: t.base, Usage: t.usage, FencingToken: t.fence,
		ChangedPaths: changedPaths(t.changes), Artifacts: append([]string{}, t.logs...),
	}
	var sum []string
	if t.report != "" {
		sum = append(sum, t.report)
	}
	sum = append(sum, t.notes...)
	rc.Summary = envelope.TruncateSummary(strings.Join(sum, "\n"))
	return rc
}

// succeed records a task's success — commit is on the integration branch
// (or is the base, when the task changed nothing) — registers its children
// and releases its dependents.
func (r *runner) succeed(t *taskState, commit, kind string, checks []envelope.CheckResult) {
	if len(t.kids) > 0 {
		// Done when the children it spawned are: no child outlives its parent.
		t.afterKids = func() { r.succeed(t, commit, kind, checks) }
		r.must(r.st.Emit(Event{Kind: rundir.EvAwaitingChildren, Task: t.name, Tasks: len(t.kids), Commit: commit}))
		return
	}
	why := ""
	if kind == "" {
		why = "its agent changed nothing: there was nothing to integrate"
	}
	rc := r.receiptOf(t, envelope.StatusSucceeded, why)
	rc.Commit = commit
	rc.Checks = checks
	if kind != "" {
		rc.Integrated = &kind
	}
	for _, k := range t.children {
		rc.Artifacts = append(rc.Artifacts, k.file)
	}
	rc.Artifacts = append(rc.Artifacts, t.spawned...)
	r.record(t, rc)
	r.deleteBranches(t)
	for _, k := range t.children {
		c := r.addChild(t, k.name, k.env)
		if k.budget != nil {
			c.budget = k.budget
		}
	}
	r.release(t)
}

// finishChecked records a task whose checks failed on the tree being
// integrated.
func (r *runner) finishChecked(t *taskState, fs []gate.Failure, checks []envelope.CheckResult) {
	r.finish(t, envelope.StatusFailed, "rejected: "+fs[0].Error(), fs, checks)
}

// finish records a task that did not succeed and releases its dependents
// (dependents through data edges are skipped).
//
// A failure of a member of a supervision group goes to its group first,
// which may restart it instead. A task whose spawned children still run
// cancels them and is finished when they are.
func (r *runner) finish(t *taskState, status envelope.Status, reason string, fs []gate.Failure, checks []envelope.CheckResult) {
	if t.done() {
		return
	}
	if status == envelope.StatusFailed && r.superviseFailure(t, reason) {
		return
	}
	if len(t.kids) > 0 {
		for _, k := range t.kids {
			_, _ = r.tree.Cancel(k.name, "its parent "+t.name+" "+string(status)+": "+attempt.Clip(reason, 200))
		}
		t.afterKids = func() { r.finish(t, status, reason, fs, checks) }
		return
	}
	for _, k := range t.children { // accepted .apiary/out children that will never run
		if k.budget != nil {
			k.budget.Close()
		}
	}
	if status == envelope.StatusCancelled && len(t.branches) > 0 {
		r.deleteBranches(t) // nothing on them to look at: the agents were stopped
	}
	rc := r.receiptOf(t, status, reason)
	rc.Commit = t.candidate
	rc.Checks = checks
	rc.Gate, rc.GateFailures = gateReasons(fs)
	r.record(t, rc)
	r.release(t)
}

// record writes the receipt: from now on the task is done.
func (r *runner) record(t *taskState, rc *envelope.Receipt) {
	if err := r.st.Task(t.name).WriteReceipt(rc); err != nil {
		r.must(err)
		t.state = stateInterrupted
		return
	}
	t.receipt, t.state = rc, stateDone
	r.must(r.st.Emit(Event{Kind: rundir.EvTaskDone, Task: t.name, Attempt: t.attempts, Status: string(rc.Status), Reason: rc.Reason, Gate: rc.Gate, Commit: rc.Commit, Integrated: deref(rc.Integrated)}))
	r.afterDone(t)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// deleteBranches removes a succeeded task's attempt branches (its work is
// on the integration branch now) or a cancelled one's.
func (r *runner) deleteBranches(t *taskState) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.runCtx), attempt.CleanupTimeout)
	defer cancel()
	branches := t.branches
	if len(branches) == 0 {
		branches = []string{branchName(r.rec.RunID, t.name)}
	}
	for _, b := range branches {
		if err := r.wt.Do(func() error { return r.repo.DeleteBranch(ctx, b) }); err == nil {
			_ = r.st.Emit(Event{Kind: rundir.EvBranchDeleted, Task: t.name, Branch: b})
		}
	}
}

// addChild registers an accepted child of t, scheduled after it.
func (r *runner) addChild(t *taskState, name string, env *envelope.Envelope) *taskState {
	tmpl := *env
	tmpl.Inputs.Workspace = ""
	c := r.addTask(name, env.TaskID, t, env.Depth, &tmpl, t.prio)
	r.must(r.st.Emit(Event{Kind: rundir.EvChildAdded, Task: name, Parent: t.name}))
	if c.done() {
		return c
	}
	r.wire(c)
	return c
}

// loadChildren reads the accepted children a succeeded task's receipt
// lists.
func loadChildren(taskDir string, rc *envelope.Receipt) ([]*envelope.Envelope, error) {
	var out []*envelope.Envelope
	for _, a := range rc.Artifacts {
		if !strings.HasPrefix(a, "children/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(taskDir, a))
		if err != nil {
			return nil, err
		}
		e, err := envelope.DecodeEnvelope(b)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
