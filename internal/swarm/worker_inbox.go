package swarm

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm/gatekeeper"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// refollow follows the shards the live hosts now assign this host, and
// stops following the others: their announcement watch and gatekeeper
// campaign end, and what the host knew of them is dropped.
func (h *hostState) refollow(ctx context.Context) error {
	h.divideAt = time.Time{}
	run, n := h.env.run.Run, h.env.run.Options.Shards
	// A host without workers (the merge role's, say) follows nothing.
	want := map[int]bool{}
	if len(h.workers) > 0 {
		for _, s := range shardsOf(slices.Collect(maps.Values(h.hosts)), h.env.host, n) {
			want[s] = true
		}
	}
	for s, f := range h.shards {
		if want[s] {
			continue
		}
		f.stop()
		delete(h.shards, s)
		for task := range h.ready {
			if h.shardOf[task] == s {
				delete(h.ready, task)
				delete(h.asked, task)
			}
		}
		h.env.log.Debug("shard unfollowed", "shard", s)
	}
	for s := range n {
		if !want[s] || h.shards[s] != nil {
			continue
		}
		sctx, stop := context.WithCancel(ctx)
		f := &followedShard{stop: stop}
		h.shards[s] = f
		// The host learns how its requests went from its inbox, not from
		// the announcements' deletions, which it is not sent.
		err := h.watch(sctx, layout.ShardFeed(run, s)+"ready/", board.WatchOptions{NoDelete: true}, func(evs []board.Event) {
			if h.shards[s] == f {
				h.onReady(s, evs)
			}
		})
		if err != nil {
			stop()
			delete(h.shards, s)
			return err
		}
		env := h.env
		h.spawn(func() {
			h.campaign(sctx, layout.ShardRole(run, s), func(lctx context.Context, l *board.Leadership) error {
				return gatekeeper.Run(lctx, &gatekeeper.Env{Store: env.st, Run: env.run, Clock: env.clock, Log: env.log, Host: env.host}, s, l)
			})
		})
		h.env.log.Debug("shard followed", "shard", s)
	}
	return nil
}

// onReady applies a followed shard's announcements. A task stays in the
// host's view until one of its workers is granted it or asks for it
// (h.asked): a task claimed for another host's worker is still there, and
// a request for it is answered as a lost one.
func (h *hostState) onReady(shard int, evs []board.Event) {
	for _, ev := range evs {
		task := layout.LastSeg(ev.Key)
		var n layout.ReadyNote
		if ev.Type == board.EventPut && json.Unmarshal(ev.Value, &n) == nil {
			n.Record = nil // the gatekeeper's, not ours
			h.ready[task], h.shardOf[task] = n, shard
			delete(h.asked, task) // announced again: put back
		}
	}
}

// onOpen applies the watchdog's open tasks, which any host may take.
func (h *hostState) onOpen(evs []board.Event) {
	for _, ev := range evs {
		task := layout.LastSeg(ev.Key)
		if ev.Type != board.EventPut {
			delete(h.opens, task)
			continue
		}
		var g layout.GrantNote
		if json.Unmarshal(ev.Value, &g) == nil {
			h.opens[task], h.shardOf[task] = g, g.Shard
		}
	}
}

// onInbox applies an entry of this host's inbox: a task claimed for one
// of its workers or offered to it, which waits in the worker's queue for a
// free slot, or a speculative attempt to cancel.
func (h *hostState) onInbox(ctx context.Context, ev board.Event) {
	rest := strings.TrimPrefix(ev.Key, layout.InboxPrefix(h.env.run.Run, h.env.host))
	kind, _, _ := strings.Cut(rest, "/")
	task := layout.LastSeg(ev.Key)
	switch kind {
	case "lost":
		var n layout.LostNote
		if json.Unmarshal(ev.Value, &n) == nil {
			if b := h.bids[n.Task]; b != nil && b.worker.spec.ID == layout.LastSeg(ev.Key) {
				delete(h.bids, n.Task)
			}
		}
	case "cancel":
		if cancel := h.cancels[task]; cancel != nil {
			cancel()
		} else {
			h.cancelled[task] = true
		}
	case "grant":
		var g layout.GrantNote
		if json.Unmarshal(ev.Value, &g) != nil || h.started[task] {
			return
		}
		w := h.byID[g.Worker]
		if w == nil {
			return
		}
		delete(h.bids, task)
		if b := h.bids[g.For]; b != nil && b.worker == w {
			delete(h.bids, g.For) // the request this consoles
		}
		delete(h.ready, task)
		delete(h.asked, task)
		for _, it := range w.queue {
			if it.g.Task == task {
				return
			}
		}
		w.queue = append(w.queue, inboxItem{g: g, rev: ev.Revision, claimed: !g.Offer, via: ev.Key})
	}
}

// start runs one attempt for w in a goroutine; its context is cancelled
// when the host stops or a cancellation for it arrives.
func (h *hostState) start(ctx context.Context, w *hostWorker, it inboxItem) {
	id := it.g.Task
	w.busy++
	w.dirty = true
	h.started[id] = true
	wctx, cancel := context.WithCancel(ctx)
	h.cancels[id] = cancel
	if h.cancelled[id] {
		delete(h.cancelled, id)
		cancel()
	}
	h.spawn(func() {
		defer cancel()
		res := h.work(ctx, wctx, w, it)
		select {
		case h.results <- res:
		case <-ctx.Done():
		}
	})
}

// finished takes a work goroutine's report.
func (h *hostState) finished(res workResult) {
	w := res.w
	if !res.freed {
		w.busy--
		w.dirty = true
	}
	delete(h.started, res.task)
	delete(h.cancels, res.task)
	if g, ok := h.opens[res.task]; ok && res.stale != 0 && g.Rev == res.stale {
		delete(h.opens, res.task) // claimed another way: its note is left over
	}
	if res.ran {
		w.history.Record(res.tags, res.ok)
		w.recent = append(w.recent, res.ok)
		if len(w.recent) > 10 {
			w.recent = w.recent[1:]
		}
	}
}
