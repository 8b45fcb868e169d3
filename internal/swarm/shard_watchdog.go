package swarm

import (
	"context"
	"encoding/json"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// watch runs the watchdog's due offers and openings.
func (g *gatekeeper) watch(ctx context.Context, now time.Time) {
	offers, opens := g.wd.due(now)
	if g.cooldown {
		return
	}
	run, s := g.env.run.Run, g.shard
	for _, task := range opens {
		res, err := g.env.st.Txn(ctx, board.Txn{
			If:   []board.Cmp{g.lead.Guard(), board.Absent(board.ClaimKey(task))},
			Then: []board.Op{board.DeleteOp(grantKey(run, s, task)), board.PutOp(openKey(run, s, task), []byte(`{}`), board.NoLease)},
		})
		if err == nil && res.Succeeded {
			g.wd.opened(task, now)
			g.env.log.Info("watchdog: task open to any worker", "task", task)
		} else {
			g.wd.claimed(task)
		}
	}
	if len(offers) == 0 {
		return
	}
	workers, err := liveWorkers(ctx, g.env.st, run)
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
			g.wd.retry(task, now)
		}
		return
	}
	for _, task := range offers {
		t, err := g.env.st.Task(ctx, task)
		if err != nil || t.Status != board.TaskReady {
			g.wd.claimed(task)
			continue
		}
		agent := g.ready[task].note.Agent
		var best *liveWorker
		var bestScore float64
		for i := range workers {
			w := &workers[i]
			if w.rec.Observing || w.rec.Idle <= g.offersTo(w.rec, now) {
				continue // offers go to live workers with an idle slot
			}
			sc := Competence(w.rec.Skills, w.rec.Profile, w.rec.History, t.Tags, agent)
			if best == nil || sc > bestScore || sc == bestScore && w.rev < best.rev {
				best, bestScore = w, sc
			}
		}
		if best == nil {
			g.wd.retry(task, now)
			continue
		}
		grant := grantNote{Task: task, Worker: best.rec.Worker, Host: best.rec.Host, Score: bestScore, Offer: true}
		ops := []board.Op{board.PutOp(grantKey(run, s, task), mustJSON(grant), best.lease), board.DeleteOp(readyKey(run, s, task))}
		for k := range g.bids[task] {
			ops = append(ops, board.DeleteOp(k))
		}
		res, err := g.env.st.Txn(ctx, board.Txn{
			If:   []board.Cmp{g.lead.Guard(), board.ModifiedAt(board.TaskKey(task), t.Revision), board.Absent(board.ClaimKey(task))},
			Then: ops,
		})
		if err == nil && res.Succeeded {
			g.offered[best.rec.Worker] = append(g.offered[best.rec.Worker], now)
			g.wd.offered(task, now)
			g.decided[task] = true
			g.forgetBids(task)
			g.env.log.Info("watchdog: task offered", "task", task, "worker", best.rec.Worker, "score", bestScore)
		} else {
			g.wd.retry(task, now)
		}
	}
}

// liveWorker is a registry entry with its lease.
type liveWorker struct {
	rec   WorkerRecord
	lease board.LeaseID
	rev   int64
}

func liveWorkers(ctx context.Context, st *board.Store, run string) ([]liveWorker, error) {
	kvs, _, err := st.List(ctx, workersPrefix(run))
	if err != nil {
		return nil, err
	}
	out := make([]liveWorker, 0, len(kvs))
	for _, kv := range kvs {
		var r WorkerRecord
		if json.Unmarshal(kv.Value, &r) == nil {
			out = append(out, liveWorker{rec: r, lease: kv.Lease, rev: kv.CreateRevision})
		}
	}
	return out, nil
}
