package layout

import (
	"context"
	"encoding/json"
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

// TxnGuarded runs a transaction whose first comparison is the task record
// at rev, followed by guards, and maps a failure to the reason.
func TxnGuarded(ctx context.Context, st BoardRW, t board.Task, guards []board.Cmp, conds []board.Cmp, ops []board.Op) (board.TxnResult, error) {
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

// ClaimToken is the fencing token of the claim a running task is worked
// under. A claim decision writes the record in the claim's own
// transaction, whose revision is the token, so the record cannot carry it
// (Token 0): the record's revision is the token until an outcome is
// recorded, which writes it; speculative attempts keep it in Live.
func ClaimToken(t board.Task, p *Payload) int64 {
	switch {
	case t.Token != 0:
		return t.Token
	case p != nil && p.Live != nil:
		return p.Live.Token
	case t.Status == board.TaskRunning:
		return t.Revision
	}
	return 0
}

// AttemptEnd are the writes that end an attempt, in the transaction that
// records its outcome: the claim, its run marker, the host's inbox entry
// and the worker's intent.
func AttemptEnd(run string, shard int, host string, cl board.Claim) []board.Op {
	return []board.Op{cl.ReleaseOp(), board.DeleteOp(MarkerKey(run, shard, cl.Task)),
		board.DeleteOp(InboxKey(run, host, cl.Task)), board.DeleteOp(board.IntentKey(cl.Task, cl.Agent))}
}

// promotion is a dependent whose state the settling task changes.
type promotion struct {
	t      board.Task
	p      *Payload
	status board.TaskStatus
	reason string
}

// promotions reads t's pending dependents and decides, given t's new
// status, which become ready and which are cancelled; conds pin everything
// read.
func promotions(ctx context.Context, st BoardRW, run *Record, t board.Task, p *Payload) ([]promotion, []board.Cmp, error) {
	var out []promotion
	var conds []board.Cmp
	seen := map[string]board.Task{t.ID: t}
	for _, name := range p.Succ {
		d, err := st.Task(ctx, TaskID(run.Run, name))
		if err != nil {
			return nil, nil, err
		}
		if d.Status != board.TaskPending {
			continue
		}
		dp, err := DecodePayload(d)
		if err != nil {
			return nil, nil, err
		}
		kinds := map[string]envelope.DepKind{}
		if dp.Envelope != nil {
			for _, dep := range dp.Envelope.Deps {
				kinds[TaskID(run.Run, dep.Task)] = dep.Kind
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
	val, err := EncodeTask(t, p)
	if err != nil {
		return nil, err
	}
	ops := []board.Op{board.PutOp(board.TaskKey(t.ID), val, board.NoLease)}
	if pr.status == board.TaskReady {
		ops = append(ops, board.PutOp(ReadyKey(run.Run, p.Shard, t.ID), MustJSON(NoteOf(t, p, val, 0)), board.NoLease))
	}
	return ops, nil
}

// Settle records t (already carrying its final status and p its results)
// and, in the same transaction, makes its dependents ready (all their
// dependencies done) or cancels them (a data dependency did not succeed).
// extra operations ride along (deleting the candidate record, say).
// Cancellations propagate to their own dependents afterwards.
func Settle(ctx context.Context, st BoardRW, run *Record, t board.Task, p *Payload, guards []board.Cmp, extra ...board.Op) (board.Task, error) {
	for try := 0; ; try++ {
		proms, conds, err := promotions(ctx, st, run, t, p)
		if err != nil {
			return t, err
		}
		val, err := EncodeTask(t, p)
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
		res, err := TxnGuarded(ctx, st, t, guards, conds, ops)
		if errors.Is(err, errRetry) && try < 20 {
			continue
		}
		if err != nil {
			return t, err
		}
		t.Revision = res.Revision
		for _, pr := range later {
			if err := Promote(ctx, st, run, pr.t.ID); err != nil {
				return t, err
			}
		}
		for _, pr := range proms {
			if pr.status == board.TaskCancelled {
				ct := pr.t
				if ct, err = st.Task(ctx, ct.ID); err != nil {
					return t, err
				}
				cp, err := DecodePayload(ct)
				if err != nil {
					return t, err
				}
				if _, err := Settle(ctx, st, run, ct, cp, nil); err != nil && !errors.Is(err, board.ErrRevisionMismatch) {
					return t, err
				}
			}
		}
		return t, nil
	}
}

// Promote re-evaluates one pending task from its dependencies' states, as
// the dependent of a settled task would have been: used after a settle too
// large for one transaction and by a gatekeeper's repair scan.
func Promote(ctx context.Context, st BoardRW, run *Record, id string) error {
	for try := 0; try < 20; try++ {
		d, err := st.Task(ctx, id)
		if err != nil || d.Status != board.TaskPending {
			return err
		}
		// Evaluate d as the dependent of a pseudo-task that is one of its
		// dependencies.
		fake := &Payload{Succ: []string{taskName(run.Run, id)}}
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
				cp, err := DecodePayload(ct)
				if err != nil {
					return err
				}
				_, err = Settle(ctx, st, run, ct, cp, nil)
				return err
			}
			return nil
		}
	}
	return fmt.Errorf("task %s: promotion kept conflicting: %w", id, board.ErrRevisionMismatch)
}

// Requeue puts t back up for claiming after a failed attempt — or fails it
// (cancelling its data dependents) once its attempts are used up.
func Requeue(ctx context.Context, st BoardRW, run *Record, t board.Task, p *Payload, reason string, guards []board.Cmp, extra ...board.Op) (board.Task, error) {
	p.Notes = append(p.Notes, fmt.Sprintf("attempt %d: %s", t.Attempts, attempt.Clip(reason, 300)))
	if len(p.Notes) > 20 {
		p.Notes = p.Notes[len(p.Notes)-20:]
	}
	p.Live = nil
	if t.Attempts >= run.Options.MaxAttempts {
		t.Status, p.Reason = board.TaskFailed, reason
		return Settle(ctx, st, run, t, p, guards, extra...)
	}
	t.Status, t.Worker, t.Token = board.TaskReady, "", 0
	val, err := EncodeTask(t, p)
	if err != nil {
		return t, err
	}
	ops := append([]board.Op{board.PutOp(board.TaskKey(t.ID), val, board.NoLease),
		board.PutOp(ReadyKey(run.Run, p.Shard, t.ID), MustJSON(NoteOf(t, p, val, 0)), board.NoLease)}, extra...)
	res, err := TxnGuarded(ctx, st, t, guards, nil, ops)
	if errors.Is(err, errRetry) {
		err = fmt.Errorf("task %s: %w", t.ID, board.ErrRevisionMismatch)
	}
	if err != nil {
		return t, err
	}
	t.Revision = res.Revision
	return t, nil
}

// Terminal reports whether a task status is final.
func Terminal(s board.TaskStatus) bool {
	return s == board.TaskDone || s == board.TaskFailed || s == board.TaskCancelled
}

// ClaimRecord moves a task's record to the claim of m: the task running
// (its first attempt), or the speculative attempt's slot.
func ClaimRecord(t *board.Task, p *Payload, m RunMarker) error {
	t.Attempts++
	p.Workers = append(p.Workers, m.Worker)
	if m.Slot > 0 {
		return p.Live.claim(m)
	}
	t.Status, t.Worker, t.Token = board.TaskRunning, m.Worker, 0
	return nil
}

// DecodeRecord reads an announcement's or a grant's task record.
func DecodeRecord(raw json.RawMessage, rev int64) (board.Task, *Payload, error) {
	if len(raw) == 0 {
		return board.Task{}, nil, ErrNoRecord
	}
	t, err := board.DecodeTask(board.KV{Value: raw, ModRevision: rev})
	if err != nil {
		return t, nil, err
	}
	p, err := DecodePayload(t)
	return t, p, err
}

// ErrNoRecord: an announcement's record could not be read.
var ErrNoRecord = errors.New("swarm: announcement without a task record")

// BoardRW is what the task transitions read and write through: the store,
// or a host's committer in front of it.
type BoardRW interface {
	Task(ctx context.Context, id string) (board.Task, error)
	Txn(ctx context.Context, t board.Txn) (board.TxnResult, error)
}

var _ BoardRW = (*board.Store)(nil)
