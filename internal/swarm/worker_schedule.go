package swarm

import (
	"context"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// schedule starts granted work, takes open tasks and asks for more.
func (h *hostState) schedule(ctx context.Context) {
	h.drain()
	now := h.env.clock.Now()
	run := h.env.run.Run
	pending := map[*hostWorker]int{}
	for t, b := range h.bids {
		if now.Sub(b.since) > bidTimeout {
			delete(h.bids, t)
			h.withdraw(ctx, t, b)
			continue
		}
		pending[b.worker]++
	}
	// Grants first: the gatekeeper chose these workers.
	for task, g := range h.grants {
		w := h.byID[g.Worker]
		if h.started[task] {
			continue
		}
		if w.free(0) <= 0 {
			w.offers[task] = g // an offer waits for a free slot
			continue
		}
		delete(h.grants, task)
		h.start(ctx, w, task, g.Score, grantKey(run, h.shardOf[task], task))
	}
	if h.cooldown {
		return
	}
	// Open tasks: anyone may take them (one try a second each: a task taken
	// elsewhere stays listed until its gatekeeper tidies up).
	for task := range h.opens {
		if h.started[task] || now.Sub(h.tried[task]) < time.Second {
			continue
		}
		h.tried[task] = now
		for _, w := range h.workers {
			if w.free(pending[w]) > 0 && !w.policy.Observing() {
				h.start(ctx, w, task, 0, openKey(run, h.shardOf[task], task))
				break
			}
		}
	}
	// Ask for ready tasks, best first, one request per free slot.
	free := 0
	for _, w := range h.workers {
		free += max(w.free(pending[w]), 0)
	}
	if len(h.ready) == 0 || free == 0 {
		return
	}
	// Each request looks at up to bidScan matching candidates not taken in
	// this round, so when every worker matches every task no more than
	// free+bidScan of the first tasks in priority order can matter; a
	// worker that finds nothing in those looks at all of them.
	order, ready := h.topReady(free + bidScan)
	if len(order) == 0 {
		return // nothing to decide: no score
	}
	whole := len(order) == ready
	// The snapshot is the view as of now, every delivered change applied;
	// scores computed from it go stale if deciding takes too long.
	snap := Snapshot{At: now, Ready: ready, Workers: len(h.workers), Cooldown: h.cooldown}
	var ops []board.Op
	taken := map[string]bool{}
	for _, w := range h.workers {
		for w.free(pending[w]) > 0 {
			s := snap
			s.Idle = w.free(pending[w])
			s.Recent, s.Failed = len(w.recent), countBool(w.recent, false)
			sc := w.policy.Score("bid", s)
			if !w.policy.Act(sc) {
				break
			}
			best, bestScore := h.pick(w, order, taken)
			if best == "" && !whole {
				order, _ = h.topReady(len(h.ready))
				whole = true
				best, bestScore = h.pick(w, order, taken)
			}
			if best == "" {
				break
			}
			taken[best] = true
			shard := h.shardOf[best]
			ops = append(ops, board.PutOp(bidKey(run, shard, best, w.spec.ID),
				mustJSON(bidNote{Task: best, Worker: w.spec.ID, Host: h.env.host, Score: bestScore,
					Skills: w.spec.Skills, Profile: w.spec.Profile}), h.sess.Lease()))
			h.bids[best] = &outBid{worker: w, since: now, shard: shard}
			pending[w]++
		}
	}
	if len(ops) == 0 {
		return
	}
	// The requests are only as good as the view they were decided on: a
	// view older than the policy allows counts for nothing.
	if h.env.clock.Now().Sub(snap.At) > h.workers[0].policy.cfg.StaleAfter {
		for _, op := range ops {
			delete(h.bids, bidTask(op.Key))
		}
		return
	}
	sent := map[string]*outBid{}
	for _, op := range ops {
		t := bidTask(op.Key)
		sent[t] = h.bids[t]
	}
	h.background(ctx, func() func() {
		err := h.writeOps(ctx, ops)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		return func() {
			// Some may have gone through; those the gatekeepers drop when
			// their bid window passes with the task decided otherwise.
			h.env.log.Debug("claim requests", "err", err)
			for t, b := range sent {
				if h.bids[t] == b {
					delete(h.bids, t)
				}
			}
		}
	})
}

// markIdle records each worker's free slots that have no request out: the
// registry publishes them, and the watchdog offers tasks only to those.
func (h *hostState) markIdle() {
	pending := map[*hostWorker]int{}
	for _, b := range h.bids {
		pending[b.worker]++
	}
	for _, w := range h.workers {
		idle := max(w.free(pending[w]), 0)
		if w.idle != idle {
			w.idle, w.dirty = idle, true
		}
	}
}

// bidScan is how many candidate tasks a claim request compares.
const bidScan = 32

// readyBefore orders ready tasks: higher priority first, then by name.
func readyBefore(a, b string, na, nb readyNote) bool {
	if na.Prio != nb.Prio {
		return na.Prio > nb.Prio
	}
	return a < b
}

// topReady returns, in order, the first n ready tasks this host has neither
// asked for nor started, and how many such tasks there are.
func (h *hostState) topReady(n int) ([]string, int) {
	cand := make([]string, 0, len(h.ready))
	for t := range h.ready {
		if h.bids[t] == nil && !h.started[t] {
			cand = append(cand, t)
		}
	}
	total := len(cand)
	return firstN(cand, n, func(a, b string) bool { return readyBefore(a, b, h.ready[a], h.ready[b]) }), total
}

// pick returns the task w fits best among the first bidScan in order that
// it matches and nobody took this round, with its competence.
func (h *hostState) pick(w *hostWorker, order []string, taken map[string]bool) (string, float64) {
	best, bestScore := "", -1.0
	for i, scanned := 0, 0; i < len(order) && scanned < bidScan; i++ {
		t := order[i]
		n := h.ready[t]
		if taken[t] || !Matches(w.spec.Skills, n.Tags) {
			continue
		}
		scanned++
		if c := Competence(w.spec.Skills, w.spec.Profile, w.history, n.Tags, n.Agent); c > bestScore {
			best, bestScore = t, c
		}
	}
	return best, bestScore
}

// bidTask extracts the task from a bid key.
func bidTask(key string) string {
	parts := strings.Split(key, "/")
	return unesc(parts[len(parts)-2])
}

func countBool(bs []bool, v bool) int {
	n := 0
	for _, b := range bs {
		if b == v {
			n++
		}
	}
	return n
}

// withdraw deletes a request that waited too long.
func (h *hostState) withdraw(ctx context.Context, task string, b *outBid) {
	key := bidKey(h.env.run.Run, b.shard, task, b.worker.spec.ID)
	h.background(ctx, func() func() {
		_, err := h.env.st.Txn(ctx, board.Txn{Then: []board.Op{board.DeleteOp(key)}})
		if err != nil && ctx.Err() == nil {
			h.env.log.Debug("withdrawing a claim request", "task", task, "err", err)
		}
		return nil
	})
}
