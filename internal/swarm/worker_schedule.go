package swarm

import (
	"context"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
	"github.com/apiary-dev/apiary/internal/swarm/policy"
)

// schedule starts what arrived for the workers, takes open tasks and asks
// for more.
func (h *hostState) schedule(ctx context.Context) {
	h.drain()
	now := h.env.clock.Now()
	run := h.env.run.Run
	pending := map[*hostWorker]int{}
	for t, b := range h.bids {
		if now.Sub(b.since) > bidTimeout {
			// Forgotten, not withdrawn: a write per timeout would add to
			// the load that most often causes it. If it is decided
			// after all, the task waits in the worker's queue.
			delete(h.bids, t)
			continue
		}
		pending[b.worker]++
	}
	// What arrived first: the gatekeepers chose these workers.
	for _, w := range h.workers {
		for w.busy < w.spec.Slots && len(w.queue) > 0 {
			it := w.queue[0]
			w.queue = w.queue[1:]
			if !h.started[it.g.Task] {
				h.start(ctx, w, it)
			}
		}
	}
	if h.cooldown {
		return
	}
	// Open tasks: anyone may take them (one try a second each: a task taken
	// elsewhere stays listed until its gatekeeper tidies up).
	for task, g := range h.opens {
		if h.started[task] || now.Sub(h.tried[task]) < time.Second {
			continue
		}
		h.tried[task] = now
		for _, w := range h.workers {
			if w.free(pending[w]) > 0 && !w.policy.Observing() {
				g.Worker = w.spec.ID
				h.start(ctx, w, inboxItem{g: g, via: layout.OpenKey(run, g.Shard, task)})
				break
			}
		}
	}
	ops := h.ask(h.workers, pending)
	if len(ops) == 0 {
		return
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
			h.unask(ops)
		}
	})
}

// ask returns the claim requests of workers for ready tasks, best first,
// one per free slot (and up to Prefetch more), given the requests each
// has out (pending, updated), and records them as out.
func (h *hostState) ask(workers []*hostWorker, pending map[*hostWorker]int) []board.Op {
	now := h.env.clock.Now()
	run := h.env.run.Run
	asks := func(w *hostWorker) int { return w.free(pending[w]) + h.cfg.Prefetch }
	free := 0
	for _, w := range workers {
		free += max(asks(w), 0)
	}
	if len(h.ready) == 0 || free == 0 {
		return nil
	}
	// Each request looks at up to bidScan matching candidates not taken in
	// this round, so when every worker matches every task no more than
	// free+bidScan of the first tasks in priority order can matter; a
	// worker that finds nothing in those looks at all of them.
	order, ready := h.topReady(free + bidScan)
	if len(order) == 0 {
		return nil // nothing to decide: no score
	}
	whole := len(order) == ready
	// The snapshot is the view as of now, every delivered change applied;
	// scores computed from it go stale if deciding takes too long.
	snap := policy.Snapshot{At: now, Ready: ready, Workers: len(h.workers), Cooldown: h.cooldown}
	var ops []board.Op
	taken := map[string]bool{}
	for _, w := range workers {
		for asks(w) > 0 {
			s := snap
			s.Idle = max(w.free(pending[w]), 1)
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
			ops = append(ops, board.PutOp(layout.BidKey(run, shard, best, w.spec.ID),
				layout.MustJSON(layout.BidNote{Task: best, Worker: w.spec.ID, Host: h.env.host, Score: bestScore,
					Skills: w.spec.Skills, Profile: w.spec.Profile}), h.sess.Lease()))
			h.bids[best] = &outBid{worker: w, since: now, shard: shard}
			h.asked[best] = true
			pending[w]++
		}
	}
	// The requests are only as good as the view they were decided on: a
	// view older than the policy allows counts for nothing.
	if len(ops) > 0 && h.env.clock.Now().Sub(snap.At) > h.workers[0].policy.StaleAfter() {
		h.unask(ops)
		return nil
	}
	return ops
}

// unask forgets requests that were not written.
func (h *hostState) unask(ops []board.Op) {
	for _, op := range ops {
		delete(h.bids, bidTask(op.Key))
		delete(h.asked, bidTask(op.Key))
	}
}

// freeSlot frees w's slot once an attempt's work is done — recording it is
// the board's round trip, not the worker's — and returns the worker's next
// claim requests, for the transaction that records the attempt: so that
// asking for the next task costs no write of its own.
func (h *hostState) freeSlot(ctx context.Context, w *hostWorker) []board.Op {
	reply := make(chan []board.Op, 1)
	select {
	case h.freeing <- freeReq{w: w, reply: reply}:
	case <-ctx.Done():
		return nil
	}
	select {
	case ops := <-reply:
		return ops
	case <-ctx.Done():
		return nil
	}
}

// freeReq asks the loop to free a slot of w (see freeSlot).
type freeReq struct {
	w     *hostWorker
	reply chan []board.Op
}

// freed handles a freeReq on the loop.
func (h *hostState) freed(r freeReq) {
	r.w.busy--
	r.w.dirty = true
	var ops []board.Op
	if !h.cooldown {
		h.drain()
		pending := map[*hostWorker]int{}
		for _, b := range h.bids {
			pending[b.worker]++
		}
		ops = h.ask([]*hostWorker{r.w}, pending)
	}
	r.reply <- ops
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

// topReady returns, in order, the first n ready tasks this host has neither
// asked for nor started, and how many such tasks there are.
func (h *hostState) topReady(n int) ([]string, int) {
	cand := make([]string, 0, len(h.ready))
	for t := range h.ready {
		if h.bids[t] == nil && !h.started[t] && !h.asked[t] {
			cand = append(cand, t)
		}
	}
	total := len(cand)
	return firstN(cand, n, func(a, b string) bool { return layout.ReadyBefore(a, b, h.ready[a], h.ready[b]) }), total
}

// pick returns the task w fits best among the first bidScan in order that
// it matches and nobody took this round, with its competence.
func (h *hostState) pick(w *hostWorker, order []string, taken map[string]bool) (string, float64) {
	best, bestScore := "", -1.0
	for i, scanned := 0, 0; i < len(order) && scanned < bidScan; i++ {
		t := order[i]
		n := h.ready[t]
		if taken[t] || !layout.Matches(w.spec.Skills, n.Tags) {
			continue
		}
		scanned++
		if c := layout.Competence(w.spec.Skills, w.spec.Profile, w.history, n.Tags, n.Agent); c > bestScore {
			best, bestScore = t, c
		}
	}
	return best, bestScore
}

// bidTask extracts the task from a bid key.
func bidTask(key string) string {
	parts := strings.Split(key, "/")
	return layout.Unesc(parts[len(parts)-2])
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
