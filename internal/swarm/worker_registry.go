package swarm

import (
	"context"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// register writes the host's entry and its workers' registry entries,
// bound to the host's lease: before it asks for any work, so that every
// claim made on the lease has the entry whose deletion tells the
// gatekeepers the claim ended.
func (h *hostState) register(ctx context.Context) error {
	slots := 0
	for _, w := range h.workers {
		slots += w.spec.Slots
	}
	e := layout.HostEntry{Host: h.env.host, Workers: len(h.workers), Slots: slots}
	ops, _ := h.records()
	ops = append([]board.Op{board.PutOp(layout.HostKey(h.env.run.Run, h.env.host, h.sess.Lease()), layout.MustJSON(e), h.sess.Lease())}, ops...)
	return h.writeOps(ctx, ops)
}

// registerLater is register in the background, so the loop goes on
// deciding meanwhile; entries it failed to write are written next time.
func (h *hostState) registerLater(ctx context.Context) {
	ops, ws := h.records()
	if len(ops) == 0 {
		return
	}
	h.writing = true
	h.background(ctx, func() func() {
		err := h.writeOps(ctx, ops)
		return func() {
			h.writing = false
			if err != nil {
				h.env.log.Debug("refreshing the registry", "err", err)
				for _, w := range ws {
					w.dirty = true
				}
			}
		}
	})
}

// records returns the puts of the registry entries that changed, marking
// them clean, and their workers.
func (h *hostState) records() ([]board.Op, []*hostWorker) {
	var ops []board.Op
	var ws []*hostWorker
	now := h.env.clock.Now()
	for _, w := range h.workers {
		if !w.dirty {
			continue
		}
		over, load := w.policy.Overloaded()
		rec := layout.WorkerRecord{Worker: w.spec.ID, Host: h.env.host, Skills: w.spec.Skills, Profile: w.spec.Profile,
			Slots: w.spec.Slots, Busy: w.busy, Idle: w.idle, History: w.history, Observing: w.policy.Observing(),
			Scores: w.policy.Last(), Updated: now}
		if over {
			rec.Load = load
		}
		ops = append(ops, board.PutOp(layout.WorkerKey(h.env.run.Run, w.spec.ID), layout.MustJSON(rec), h.sess.Lease()))
		ws = append(ws, w)
		w.dirty = false
	}
	return ops, ws
}

// writeOps writes ops through the host's committer, in transactions of
// at most 96.
func (h *hostState) writeOps(ctx context.Context, ops []board.Op) error {
	return writeBatches(ctx, h.commit, ops)
}

// writeBatches writes ops, unconditionally, in transactions of at most 96.
func writeBatches(ctx context.Context, st layout.BoardRW, ops []board.Op) error {
	for len(ops) > 0 {
		n := min(len(ops), 96)
		if _, err := st.Txn(ctx, board.Txn{Then: ops[:n]}); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}

// background runs write off the loop; the func it returns, if any, is
// run on the loop afterwards.
func (h *hostState) background(ctx context.Context, write func() func()) {
	h.spawn(func() {
		if apply := write(); apply != nil {
			select {
			case h.applies <- apply:
			case <-ctx.Done():
			}
		}
	})
}
