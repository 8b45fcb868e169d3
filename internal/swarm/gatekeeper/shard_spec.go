package gatekeeper

import (
	"context"
	"errors"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// speculateDue starts the speculative attempts that are due: a quorum's
// other attempts as soon as its first is claimed, a hedge once its delay
// has passed with the first attempt still running.
func (g *gatekeeper) speculateDue(ctx context.Context, now time.Time) {
	for id, at := range g.specAt {
		if now.Before(at) {
			continue
		}
		delete(g.specAt, id)
		if r := g.running[id]; r != nil && r.m.Spec != nil {
			if err := g.speculate(ctx, id, r, now); err != nil && ctx.Err() == nil {
				g.env.Log.Warn("starting speculative attempts", "task", id, "err", err)
			}
		}
	}
}

// speculate announces the attempts due for task id, whose first attempt is
// r, in one transaction with its record; and schedules the hedge when a
// quorum's attempts leave it for later.
func (g *gatekeeper) speculate(ctx context.Context, id string, r *gkRun, now time.Time) error {
	sp := r.m.Spec
	hedgeAt := time.Time{}
	if d, ok := sp.HedgeDelay(&g.durations); ok {
		hedgeAt = r.since.Add(d)
	}
	for try := 0; try < 10; try++ {
		t, err := g.env.Store.Task(ctx, id)
		if err != nil {
			return err
		}
		p, err := layout.DecodePayload(t)
		if err != nil {
			return err
		}
		if t.Status != board.TaskRunning || t.Token != 0 || layout.ClaimToken(t, p) != r.token || p.Spec == nil {
			return nil // its outcome is recorded, or it is another claim's
		}
		if l := p.Live; l != nil && (l.Won || l.Lost || l.Slots[0].State != layout.SlotRunning) {
			return nil // decided, or the first attempt has ended: no hedge
		}
		hedge := !hedgeAt.IsZero() && !now.Before(hedgeAt)
		slots := layout.StartSpec(t, p, r.m, hedge)
		if len(slots) > 0 {
			val, err := layout.EncodeTask(t, p)
			if err != nil {
				return err
			}
			ops := append([]board.Op{board.PutOp(board.TaskKey(t.ID), val, board.NoLease)}, layout.AnnounceOps(g.env.Run.Run, t, p, val, slots)...)
			res, err := g.env.Store.Txn(ctx, board.Txn{
				If:   []board.Cmp{g.lead.Guard(), board.ModifiedAt(board.TaskKey(t.ID), t.Revision), board.FenceIs(id, r.token)},
				Then: ops,
			})
			if err != nil {
				return err
			}
			if !res.Succeeded {
				continue // the record moved (an attempt ended): look again
			}
			g.env.Log.Info("speculative attempts announced", "task", id, "slots", slots, "hedge", hedge)
		}
		if !p.Live.Hedged && !hedgeAt.IsZero() {
			g.specAt[id] = hedgeAt
		}
		return nil
	}
	return errors.New("swarm: the task kept moving")
}

// slotLapsed ends, as failed, the speculative attempt (slot) of task t
// whose host died, under the claim id with token: with the race's
// consequences (specEnd), guarded by the claim's absence.
func (g *gatekeeper) slotLapsed(ctx context.Context, t board.Task, p *layout.Payload, slot int, id string, token int64) error {
	st, run := g.env.Store, g.env.Run
	guards := []board.Cmp{g.lead.Guard(), board.FenceIs(id, token), board.Absent(board.ClaimKey(id))}
	for try := 0; try < 10; try++ {
		if t.Status != board.TaskRunning || p.Live == nil || slot >= len(p.Live.Slots) || p.Live.Slots[slot].State != layout.SlotRunning {
			return nil
		}
		reason := "the worker's host ended with the attempt unrecorded"
		l := p.Live
		// Its worker's profile went with its host: the attempt's spend
		// names the slot's own (a hedge's hedge_agent) if it has one.
		act, ops := layout.SpecEnd(run, &t, p, layout.SlotEnd{Slot: slot, State: layout.SlotFailed, Reason: reason})
		if l.Lost {
			reason = l.Reason
		}
		ops = append(ops, board.DeleteOp(layout.MarkerKey(run.Run, g.shard, id)))
		var err error
		switch act {
		case layout.SpecSettle:
			t.Status = board.TaskDone
			_, err = layout.Settle(ctx, st, run, t, p, guards, ops...)
		case layout.SpecRequeue:
			_, err = layout.Requeue(ctx, st, run, t, p, reason, guards, ops...)
		default:
			var val []byte
			if val, err = layout.EncodeTask(t, p); err == nil {
				_, err = layout.TxnGuarded(ctx, st, t, guards, nil, append([]board.Op{board.PutOp(board.TaskKey(t.ID), val, board.NoLease)}, ops...))
			}
		}
		if !errors.Is(err, board.ErrRevisionMismatch) {
			return err
		}
		if t, err = st.Task(ctx, t.ID); err != nil {
			return err
		}
		if p, err = layout.DecodePayload(t); err != nil {
			return err
		}
	}
	return errors.New("swarm: the task kept moving")
}
