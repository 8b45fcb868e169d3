package swarm

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
)

// Task transitions on the board. Each is one transaction that holds only if
// the task record is still the one read (its ModRevision) and every guard
// holds: the claim's fencing token for a worker, the election key for a
// gatekeeper or the merge role. A failed guard is ErrLost; a record that
// moved is board.ErrRevisionMismatch.

// maxAtomicDeps bounds the dependents settled in the same transaction as
// the task (etcd limits the operations of one transaction); the others are
// promoted right after, and a gatekeeper's periodic scan repairs a
// promotion lost to a crash in between.
const maxAtomicDeps = 24

// txnGuarded runs a transaction whose first comparison is the task record
// at rev, followed by guards, and maps a failure to the reason.
func txnGuarded(ctx context.Context, st *board.Store, t board.Task, guards []board.Cmp, conds []board.Cmp, ops []board.Op) (board.TxnResult, error) {
	ifs := append(append([]board.Cmp{board.ModifiedAt(board.TaskKey(t.ID), t.Revision)}, guards...), conds...)
	res, err := st.Txn(ctx, board.Txn{If: ifs, Then: ops})
	if err != nil || res.Succeeded {
		return res, err
	}
	if res.Current[0].ModRevision != t.Revision {
		return res, fmt.Errorf("task %s moved: %w", t.ID, board.ErrRevisionMismatch)
	}
	for i, g := range guards {
		if !g.Holds(res.Current[1+i]) {
			return res, fmt.Errorf("task %s: guard on %s failed: %w", t.ID, g.Key, ErrLost)
		}
	}
	return res, errRetry
}

// errRetry: a dependent moved between the read and the transaction.
var errRetry = errors.New("swarm: retry")

// markRunning records that worker holds task t under claim cl, with the
// task's run marker bound to the claim, deleting the grant or open key it
// was taken through.
func markRunning(ctx context.Context, st *board.Store, run string, t board.Task, p *swarmTask, cl board.Claim, worker string, del ...string) (board.Task, error) {
	t.Status, t.Worker, t.Token, t.Attempts = board.TaskRunning, worker, cl.Token, t.Attempts+1
	p.Workers = append(p.Workers, worker)
	val, err := encodeTask(t, p)
	if err != nil {
		return t, err
	}
	ops := []board.Op{board.PutOp(board.TaskKey(t.ID), val, board.NoLease),
		board.PutOp(markerKey(run, p.Shard, t.ID), mustJSON(runMarker{Worker: worker, Token: cl.Token}), cl.Lease)}
	for _, k := range del {
		ops = append(ops, board.DeleteOp(k))
	}
	res, err := txnGuarded(ctx, st, t, []board.Cmp{cl.Guard()}, nil, ops)
	if errors.Is(err, errRetry) {
		err = fmt.Errorf("task %s: %w", t.ID, board.ErrRevisionMismatch)
	}
	if err != nil {
		return t, err
	}
	t.Revision = res.Revision
	return t, nil
}

// promotion is a dependent whose state the settling task changes.
type promotion struct {
	t      board.Task
	p      *swarmTask
	status board.TaskStatus
	reason string
}

// promotions reads t's pending dependents and decides, given t's new
// status, which become ready and which are cancelled; conds pin everything
// read.
func promotions(ctx context.Context, st *board.Store, run *Record, t board.Task, p *swarmTask) ([]promotion, []board.Cmp, error) {
	var out []promotion
	var conds []board.Cmp
	seen := map[string]board.Task{t.ID: t}
	for _, name := range p.Succ {
		d, err := st.Task(ctx, taskID(run.Run, name))
		if err != nil {
			return nil, nil, err
		}
		if d.Status != board.TaskPending {
			continue
		}
		dp, err := decodePayload(d)
		if err != nil {
			return nil, nil, err
		}
		kinds := map[string]envelope.DepKind{}
		if dp.Envelope != nil {
			for _, dep := range dp.Envelope.Deps {
				kinds[taskID(run.Run, dep.Task)] = dep.Kind
			}
		}
		ready, cancel := true, ""
		var pinned []board.Cmp
		for _, depID := range d.Deps {
			dt, ok := seen[depID]
			if !ok {
				if dt, err = st.Task(ctx, depID); err != nil {
					return nil, nil, err
				}
				seen[depID] = dt
			}
			if depID != t.ID {
				pinned = append(pinned, board.ModifiedAt(board.TaskKey(depID), dt.Revision))
			}
			switch dt.Status {
			case board.TaskDone:
			case board.TaskFailed, board.TaskCancelled:
				if kinds[depID] != envelope.DepControl {
					cancel = "dependency " + taskName(run.Run, depID) + " did not succeed"
				}
			default:
				ready = false
			}
		}
		switch {
		case cancel != "":
			out = append(out, promotion{t: d, p: dp, status: board.TaskCancelled, reason: cancel})
		case ready:
			out = append(out, promotion{t: d, p: dp, status: board.TaskReady})
		default:
			continue
		}
		conds = append(conds, board.ModifiedAt(board.TaskKey(d.ID), d.Revision))
		conds = append(conds, pinned...)
	}
	return out, slices.Compact(conds), nil
}

func (pr promotion) ops(run *Record) ([]board.Op, error) {
	t, p := pr.t, pr.p
	t.Status = pr.status
	if pr.reason != "" {
		p.Reason = pr.reason
	}
	val, err := encodeTask(t, p)
	if err != nil {
		return nil, err
	}
	ops := []board.Op{board.PutOp(board.TaskKey(t.ID), val, board.NoLease)}
	if pr.status == board.TaskReady {
		ops = append(ops, board.PutOp(readyKey(run.Run, p.Shard, t.ID), mustJSON(noteOf(t, p)), board.NoLease))
	}
	return ops, nil
}

// settle records t (already carrying its final status and p its results)
// and, in the same transaction, makes its dependents ready (all their
// dependencies done) or cancels them (a data dependency did not succeed).
// extra operations ride along (deleting the candidate record, say).
// Cancellations propagate to their own dependents afterwards.
func settle(ctx context.Context, st *board.Store, run *Record, t board.Task, p *swarmTask, guards []board.Cmp, extra ...board.Op) (board.Task, error) {
	for try := 0; ; try++ {
		proms, conds, err := promotions(ctx, st, run, t, p)
		if err != nil {
			return t, err
		}
		val, err := encodeTask(t, p)
		if err != nil {
			return t, err
		}
		ops := append([]board.Op{board.PutOp(board.TaskKey(t.ID), val, board.NoLease)}, extra...)
		later := proms
		if len(proms) <= maxAtomicDeps {
			for _, pr := range proms {
				o, err := pr.ops(run)
				if err != nil {
					return t, err
				}
				ops = append(ops, o...)
			}
			later = nil
		} else {
			conds = nil
		}
		res, err := txnGuarded(ctx, st, t, guards, conds, ops)
		if errors.Is(err, errRetry) && try < 20 {
			continue
		}
		if err != nil {
			return t, err
		}
		t.Revision = res.Revision
		for _, pr := range later {
			if err := promote(ctx, st, run, pr.t.ID); err != nil {
				return t, err
			}
		}
		for _, pr := range proms {
			if pr.status == board.TaskCancelled {
				ct := pr.t
				if ct, err = st.Task(ctx, ct.ID); err != nil {
					return t, err
				}
				cp, err := decodePayload(ct)
				if err != nil {
					return t, err
				}
				if _, err := settle(ctx, st, run, ct, cp, nil); err != nil && !errors.Is(err, board.ErrRevisionMismatch) {
					return t, err
				}
			}
		}
		return t, nil
	}
}

// promote re-evaluates one pending task from its dependencies' states, as
// the dependent of a settled task would have been: used after a settle too
// large for one transaction and by a gatekeeper's repair scan.
func promote(ctx context.Context, st *board.Store, run *Record, id string) error {
	for try := 0; try < 20; try++ {
		d, err := st.Task(ctx, id)
		if err != nil || d.Status != board.TaskPending {
			return err
		}
		// Evaluate d as the dependent of a pseudo-task that is one of its
		// dependencies.
		fake := &swarmTask{Succ: []string{taskName(run.Run, id)}}
		proms, conds, err := promotions(ctx, st, run, board.Task{ID: "\x00"}, fake)
		if err != nil || len(proms) == 0 {
			return err
		}
		ops, err := proms[0].ops(run)
		if err != nil {
			return err
		}
		res, err := st.Txn(ctx, board.Txn{If: conds, Then: ops})
		if err != nil {
			return err
		}
		if res.Succeeded {
			if proms[0].status == board.TaskCancelled {
				ct, err := st.Task(ctx, id)
				if err != nil {
					return err
				}
				cp, err := decodePayload(ct)
				if err != nil {
					return err
				}
				_, err = settle(ctx, st, run, ct, cp, nil)
				return err
			}
			return nil
		}
	}
	return fmt.Errorf("task %s: promotion kept conflicting: %w", id, board.ErrRevisionMismatch)
}

// requeue puts t back up for claiming after a failed attempt — or fails it
// (cancelling its data dependents) once its attempts are used up.
func requeue(ctx context.Context, st *board.Store, run *Record, t board.Task, p *swarmTask, reason string, guards []board.Cmp, extra ...board.Op) (board.Task, error) {
	p.Notes = append(p.Notes, fmt.Sprintf("attempt %d: %s", t.Attempts, attempt.Clip(reason, 300)))
	if len(p.Notes) > 20 {
		p.Notes = p.Notes[len(p.Notes)-20:]
	}
	if t.Attempts >= run.Options.MaxAttempts {
		t.Status, p.Reason = board.TaskFailed, reason
		return settle(ctx, st, run, t, p, guards, extra...)
	}
	t.Status, t.Worker, t.Token = board.TaskReady, "", 0
	val, err := encodeTask(t, p)
	if err != nil {
		return t, err
	}
	ops := append([]board.Op{board.PutOp(board.TaskKey(t.ID), val, board.NoLease),
		board.PutOp(readyKey(run.Run, p.Shard, t.ID), mustJSON(noteOf(t, p)), board.NoLease)}, extra...)
	res, err := txnGuarded(ctx, st, t, guards, nil, ops)
	if errors.Is(err, errRetry) {
		err = fmt.Errorf("task %s: %w", t.ID, board.ErrRevisionMismatch)
	}
	if err != nil {
		return t, err
	}
	t.Revision = res.Revision
	return t, nil
}

// finishedMarker is the op that marks a claimed attempt's outcome recorded;
// add it to the transaction that records the outcome.
func finishedMarker(run string, p *swarmTask, t board.Task, cl board.Claim) board.Op {
	return board.PutOp(markerKey(run, p.Shard, t.ID), mustJSON(runMarker{Worker: t.Worker, Token: cl.Token, Finished: true}), cl.Lease)
}

// terminal reports whether a task status is final.
func terminal(s board.TaskStatus) bool {
	return s == board.TaskDone || s == board.TaskFailed || s == board.TaskCancelled
}
