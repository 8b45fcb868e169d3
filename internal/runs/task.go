package runs

import (
	"container/heap"
	"context"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// Task lifecycle states, owned by the scheduler goroutine.
const (
	statePending     = iota // waiting for dependencies
	stateQueued             // in the ready heap
	stateBusy               // an attempt, reconciliation or integration is under way
	stateDone               // a receipt is written
	stateInterrupted        // stopped by the run's cancellation; no receipt
)

// taskState is one task of a run. Everything but the immutable fields set
// at registration (name, id, parent, depth, tmpl, prio, order, ctx) belongs
// to the scheduler goroutine; attempts get copies.
type taskState struct {
	name   string
	id     string
	parent *taskState
	depth  int
	tmpl   *envelope.Envelope // without inputs.workspace and trace
	prio   float64
	order  int
	// node is the task's node in the run's cancellation tree and ctx its
	// context: derived from its parent task's (or the run's root), so
	// cancelling a task cancels its descendants.
	node *supervise.Node
	ctx  context.Context
	// lineage is the task's capability lineage below the run: (name) for a
	// plan task, the parent attempt's lineage plus its name for a child.
	lineage []string
	dynamic bool // spawned while its parent ran (apiary.spawn)

	succ    []edge
	waiting int

	state      int
	attempts   int // worker attempts started, including those found on disk
	reconciles int
	fence      uint64 // the latest fencing token issued to an attempt
	usage      envelope.Usage
	started    time.Time
	logs       []string // artifacts: attempt logs, relative to the task dir
	notes      []string // for the receipt summary
	children   []*childSpec
	report     string // the agent's last final message, bounded

	// The last worker candidate, kept for reconciliation.
	base, candidate string
	changes         []git.Change

	receipt *envelope.Receipt

	// Supervision (scheduler-owned).
	token    *capability.Token // the task's capability; attempts narrow it
	budget   *supervise.Budget // its node in the run's budget tree
	flow     *supervise.Flow   // credits for the children it emits; set by spawn
	live     map[uint64]*liveAttempt
	branches []string     // attempt branches made, for deletion
	kids     []*taskState // dynamic children not done yet
	spawned  []string     // their envelopes, children/NAME.json
	// afterKids finishes the task once its last dynamic child is done: a
	// task is never done while a child it spawned runs.
	afterKids func()
	spec      *speculation // hedged or quorum attempts in progress
	hedge     *time.Timer
	doneCh    chan struct{} // closed when the receipt is written
}

// liveAttempt is an attempt whose goroutine has not reported yet.
type liveAttempt struct {
	a *attemptState
	// abandoned: the scheduler no longer counts on it (its lease lapsed,
	// it lost a race, a restart or the task's end overtook it); its result
	// is still handed to the integrator, which refuses its stale fence.
	abandoned bool
}

// edge is a dependency arrow to a dependent task.
type edge struct {
	to   *taskState
	kind envelope.DepKind
}

func (t *taskState) done() bool { return t.state == stateDone }

func (t *taskState) succeeded() bool {
	return t.receipt != nil && t.receipt.Status == envelope.StatusSucceeded
}

// job is a unit of work for an agent: a task's attempt or the
// reconciliation of its candidate.
type job struct {
	t    *taskState
	role string // attempt.RoleWorker or attempt.RoleReconciler
	// spec marks a speculative attempt (hedge or quorum); profile, if set,
	// overrides the task's agent (a hedge's hedge_agent).
	spec    bool
	profile string
	// For attempt.RoleReconciler: the task's candidate, its base and its changes.
	base, candidate string
	changes         []git.Change
}

func (j *job) prio() float64 {
	if j.role == attempt.RoleReconciler {
		return j.t.prio + 1e12 // finish what is almost done first
	}
	return j.t.prio
}

// jobHeap orders jobs by descending priority, then registration order.
type jobHeap []*job

func (h jobHeap) Len() int { return len(h) }
func (h jobHeap) Less(i, k int) bool {
	if pi, pk := h[i].prio(), h[k].prio(); pi != pk {
		return pi > pk
	}
	return h[i].t.order < h[k].t.order
}
func (h jobHeap) Swap(i, k int) { h[i], h[k] = h[k], h[i] }
func (h *jobHeap) Push(x any)   { *h = append(*h, x.(*job)) }
func (h *jobHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// enqueue queues a job: a dynamic child's in the unbounded heap (its
// producer's credit window bounds those), everyone else's behind
// max_parallel.
func (r *runner) enqueue(j *job) {
	j.t.state = stateQueued
	if j.t.dynamic {
		heap.Push(&r.kidsReady, j)
		return
	}
	heap.Push(&r.ready, j)
}

// satisfied reports whether a dependency of the given kind on t no longer
// blocks: data needs success, control only an end.
func satisfied(t *taskState, kind envelope.DepKind) bool {
	if !t.done() {
		return false
	}
	return kind == envelope.DepControl || t.succeeded()
}

// release updates t's dependents after t is done: satisfied ones may become
// ready; dependents of a failed data dependency are skipped.
func (r *runner) release(t *taskState) {
	for _, e := range t.succ {
		d := e.to
		if d.state != statePending {
			continue
		}
		if !satisfied(t, e.kind) {
			r.finish(d, envelope.StatusSkipped, "dependency "+t.name+" did not succeed", nil, nil)
			continue
		}
		if d.waiting--; d.waiting == 0 {
			r.enqueue(&job{t: d, role: attempt.RoleWorker})
		}
	}
}

// gateReasons converts gate failures for a receipt.
func gateReasons(fs []gate.Failure) (*envelope.GateReason, []envelope.GateReason) {
	if len(fs) == 0 {
		return nil, nil
	}
	all := make([]envelope.GateReason, 0, min(len(fs), 100))
	for _, f := range fs[:min(len(fs), 100)] {
		all = append(all, f.Reason())
	}
	first := all[0]
	return &first, all
}

func changedPaths(cs []git.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path
	}
	return out
}
