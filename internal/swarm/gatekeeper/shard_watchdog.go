package gatekeeper

import (
	"context"
	"encoding/json"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// watch runs the watchdog's due offers and openings. An offer is a note
// in the chosen worker's inbox (on its host's lease) carrying the task's
// record: the worker claims the task itself when it has a slot, as a
// gatekeeper would have. Opening publishes the same note under open/ for
// every host. Both delete the announcement, so no bid can claim the task
// meanwhile, and both are guarded by the record's revision and the
// claim's absence: whoever claims it first, by any path, is the only one.
func (g *gatekeeper) watch(ctx context.Context, now time.Time) {
	offers, opens := g.wd.Due(now)
	if g.cooldown {
		return
	}
	run, s := g.env.Run.Run, g.shard
	for _, task := range opens {
		o, ok := g.offers[task]
		if !ok {
			g.wd.Claimed(task)
			continue
		}
		note := layout.GrantNote{Task: task, Shard: s, Record: o.record, Rev: o.rev, Offer: true}
		res, err := g.env.Store.Txn(ctx, board.Txn{
			If: []board.Cmp{g.lead.Guard(), board.ModifiedAt(board.TaskKey(task), o.rev), board.Absent(board.ClaimKey(task))},
			Then: []board.Op{board.DeleteOp(layout.InboxKey(run, o.host, task)), board.DeleteOp(layout.ReadyKey(run, s, task)),
				board.PutOp(layout.OpenKey(run, s, task), layout.MustJSON(note), board.NoLease)},
		})
		delete(g.offers, task)
		if err == nil && res.Succeeded {
			g.opens[task] = true
			g.wd.Opened(task, now)
			g.env.Log.Info("watchdog: task open to any worker", "task", task)
		} else {
			g.wd.Claimed(task)
		}
	}
	if len(offers) == 0 {
		return
	}
	// Nor is a task silent while its shard's followers are asking for
	// work: it is queued behind what they ask for (a backlog), and the
	// registry's idle slots, a second old, would only draw offers to
	// workers that are about to ask. decision: D-7
	if now.Sub(g.lastBid) < g.wd.OfferAfter() {
		for _, task := range offers {
			g.wd.Retry(task, now)
		}
		return
	}
	workers, err := liveWorkers(ctx, g.env.Store, run)
	if err != nil {
		return
	}
	// A task is silent only while capacity is idle: when no live worker
	// has a free slot it is not asking work for, the tasks are merely
	// queued behind busy workers, and their countdown starts again.
	// decision: D-2
	idle := false
	for _, w := range workers {
		idle = idle || !w.rec.Observing && w.rec.Idle > g.offersTo(w.rec, now)
	}
	if !idle {
		for _, task := range offers {
			g.wd.Retry(task, now)
		}
		return
	}
	for _, task := range offers {
		r, ok := g.ready[task]
		if !ok || g.decided[task] {
			g.wd.Claimed(task)
			continue
		}
		var best *liveWorker
		var bestScore float64
		for i := range workers {
			w := &workers[i]
			if w.rec.Observing || w.rec.Idle <= g.offersTo(w.rec, now) {
				continue // offers go to live workers with an idle slot
			}
			sc := layout.Competence(w.rec.Skills, w.rec.Profile, w.rec.History, r.Note.Tags, r.Note.Agent)
			if best == nil || sc > bestScore || sc == bestScore && w.rev < best.rev {
				best, bestScore = w, sc
			}
		}
		if best == nil {
			g.wd.Retry(task, now)
			continue
		}
		offer := layout.GrantNote{Task: task, Worker: best.rec.Worker, Score: bestScore, Offer: true, Shard: s, Record: r.Note.Record, Rev: r.Rev}
		ops := []board.Op{board.PutOp(layout.InboxKey(run, best.rec.Host, task), layout.MustJSON(offer), best.lease), board.DeleteOp(layout.ReadyKey(run, s, task))}
		for k := range g.bids[task] {
			ops = append(ops, board.DeleteOp(k))
		}
		res, err := g.env.Store.Txn(ctx, board.Txn{
			If:   []board.Cmp{g.lead.Guard(), board.ModifiedAt(board.TaskKey(task), r.Rev), board.Absent(board.ClaimKey(task))},
			Then: ops,
		})
		if err == nil && res.Succeeded {
			g.offered[best.rec.Worker] = append(g.offered[best.rec.Worker], now)
			g.offers[task] = gkOffer{host: best.rec.Host, record: r.Note.Record, rev: r.Rev}
			g.wd.Offered(task, now)
			g.decided[task] = true
			delete(g.ready, task)
			g.forgetBids(task)
			g.env.Log.Info("watchdog: task offered", "task", task, "worker", best.rec.Worker, "score", bestScore)
		} else {
			g.wd.Retry(task, now)
		}
	}
}

// liveWorker is a registry entry with its lease.
type liveWorker struct {
	rec   layout.WorkerRecord
	lease board.LeaseID
	rev   int64
}

func liveWorkers(ctx context.Context, st *board.Store, run string) ([]liveWorker, error) {
	kvs, _, err := st.List(ctx, layout.WorkersPrefix(run))
	if err != nil {
		return nil, err
	}
	out := make([]liveWorker, 0, len(kvs))
	for _, kv := range kvs {
		var r layout.WorkerRecord
		if json.Unmarshal(kv.Value, &r) == nil {
			out = append(out, liveWorker{rec: r, lease: kv.Lease, rev: kv.CreateRevision})
		}
	}
	return out, nil
}
