package swarm

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// The merge role adds tasks to a live run: a split task for a hot file and
// a reuse task for a duplicate it merged. A new task is written ready; the
// tasks it must come before — those not yet claimed whose write scope
// covers its file — gain it as a control dependency (they wait for it, and
// run even if it fails), and the run's record lists it, so the run is not
// finished until it is. All of it is one transaction under the merge
// role's leadership, pinned to every task record it read.

// newTask is a task the merge role adds, and the file whose writers it
// must come before ("" for none).
type newTask struct {
	spec   publishSpec
	before string
}

// errTaskExists: a task of that name is on the run already.
var errTaskExists = errors.New("task exists")

// addTask writes nt onto the run and gates the unclaimed tasks that write
// nt.before behind it. It returns errTaskExists when the name is taken.
func (m *merger) addTask(ctx context.Context, nt newTask) error {
	run := m.env.run
	st := m.env.st
	for try := 0; try < 10; try++ {
		rec, err := layout.ReadRecord(ctx, st, run.Run)
		if err != nil {
			return err
		}
		if slices.Contains(rec.Tasks, nt.spec.name) {
			return errTaskExists
		}
		id := layout.TaskID(run.Run, nt.spec.name)
		ifs := []board.Cmp{m.lead.Guard(), board.ModifiedAt(layout.RunKey(run.Run), rec.Revision), board.Absent(board.TaskKey(id))}
		var ops []board.Op
		p := &layout.Payload{Name: nt.spec.name, Envelope: nt.spec.env, Shard: layout.ShardOf(nt.spec.name, run.Options.Shards), Prio: nt.spec.prio,
			Spec: layout.SpecFor(0, "", 0, 0, plan.DefaultEstimateS, run.Options.HedgeAfterS)}
		if nt.before != "" {
			gated, gops, gifs, err := m.gate(ctx, rec, nt.spec.name, nt.before)
			if err != nil {
				return err
			}
			p.Succ = gated
			ops, ifs = append(ops, gops...), append(ifs, gifs...)
		}
		t := board.Task{ID: id, Status: board.TaskReady, Tags: nt.spec.tags}
		val, err := layout.EncodeTask(t, p)
		if err != nil {
			return err
		}
		ops = append(ops, board.PutOp(board.TaskKey(id), val, board.NoLease),
			board.PutOp(layout.ReadyKey(run.Run, p.Shard, id), layout.MustJSON(layout.NoteOf(t, p, val, 0)), board.NoLease))
		rec.Tasks = append(rec.Tasks, nt.spec.name)
		ops = append(ops, board.PutOp(layout.RunKey(run.Run), layout.MustJSON(rec), board.NoLease))
		if len(ops)+len(ifs) > board.MaxTxnOps {
			return fmt.Errorf("adding task %s: %d operations is more than one transaction holds", nt.spec.name, len(ops)+len(ifs))
		}
		res, err := st.Txn(ctx, board.Txn{If: ifs, Then: ops})
		if err != nil {
			return err
		}
		if res.Succeeded {
			m.env.log.Info("task added", "task", nt.spec.name, "before", p.Succ)
			return nil
		}
		if m.lead.Context().Err() != nil {
			return layout.ErrLost
		}
		// Something it read changed (a task was claimed, the record moved):
		// read again.
	}
	return fmt.Errorf("adding task %s: the run kept changing", nt.spec.name)
}

// gate returns the tasks of rec that are not yet claimed and write file
// (ready or pending), the writes that make each wait for task (a control
// dependency; a ready one goes back to pending), and the comparisons that
// pin what was read.
func (m *merger) gate(ctx context.Context, rec *layout.Record, task, file string) (names []string, ops []board.Op, ifs []board.Cmp, err error) {
	for _, name := range rec.Tasks {
		t, err := m.env.st.Task(ctx, layout.TaskID(rec.Run, name))
		if errors.Is(err, board.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if t.Status != board.TaskReady && t.Status != board.TaskPending {
			continue
		}
		p, err := layout.DecodePayload(t)
		if err != nil {
			return nil, nil, nil, err
		}
		if p.Envelope == nil || !slices.ContainsFunc(p.Envelope.Authority.WriteScope, func(s string) bool { return gate.InScope(file, s) }) {
			continue
		}
		if t.Status == board.TaskReady {
			ops = append(ops, board.DeleteOp(layout.ReadyKey(rec.Run, p.Shard, t.ID)))
		}
		t.Status = board.TaskPending
		t.Deps = append(t.Deps, layout.TaskID(rec.Run, task))
		env := *p.Envelope
		env.Deps = append(slices.Clone(env.Deps), envelope.Dep{Task: task, Kind: envelope.DepControl})
		p.Envelope = &env
		val, err := layout.EncodeTask(t, p)
		if err != nil {
			return nil, nil, nil, err
		}
		ops = append(ops, board.PutOp(board.TaskKey(t.ID), val, board.NoLease))
		ifs = append(ifs, board.ModifiedAt(board.TaskKey(t.ID), t.Revision))
		names = append(names, name)
	}
	return names, ops, ifs, nil
}
