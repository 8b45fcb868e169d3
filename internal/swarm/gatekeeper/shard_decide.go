package gatekeeper

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// decision is one task's part of a gatekeeper's transaction: the claim it
// makes (nil: it only drops requests), the comparisons it needs and its
// writes. rec is the task record it moves, and val the record it writes.
type decision struct {
	task  string
	rec   string
	claim *board.ClaimSpec
	conds []board.Cmp
	ops   []board.Op
	val   []byte
	// bids are the requests the decision deletes, put back if it fails;
	// marker is the run marker it writes.
	bids   map[string]layout.BidSeen
	marker layout.RunMarker
}

// size is what d adds to a transaction: comparisons and writes.
func (d decision) size() (ifs, thens int) {
	ifs, thens = len(d.conds), len(d.ops)
	if d.claim != nil {
		ifs, thens = ifs+1, thens+2
	}
	return ifs, thens
}

// decide claims every task whose bid window has closed for its best bid,
// in as few transactions as the board allows (or one per task if a batch
// fails). decision: D-7
func (g *gatekeeper) decide(ctx context.Context, now time.Time) {
	if g.cooldown || g.writing {
		return // no new claims until the merge role lifts the cool-down; one write at a time
	}
	var ds []decision
	var losers []layout.BidSeen
	recs := map[string]bool{} // records moved this round: one decision each
	for task, d := range g.deadline {
		if now.Before(d) {
			continue
		}
		r, isReady := g.ready[task]
		best, ok := layout.Winner(values(g.bids[task]))
		if !ok {
			delete(g.deadline, task)
			continue
		}
		_, running := g.running[task]
		taken := g.decided[task] || g.opens[task] || running
		if !isReady && !taken && now.Sub(g.bidSince[task]) < staleBids {
			g.deadline[task] = now.Add(staleBids / 4) // the announcement may still be on its way
			continue
		}
		if !isReady || taken {
			// Requests for a task no longer up for grabs — most often ones
			// that arrived after it was claimed: drop them, and their
			// workers lost.
			var ops []board.Op
			for k, b := range g.bids[task] {
				ops = append(ops, board.DeleteOp(k))
				losers = append(losers, b)
			}
			ds = append(ds, decision{task: task, ops: ops})
			g.forgetBids(task)
			continue
		}
		rec := recordOf(r.Note)
		if recs[rec] {
			g.deadline[task] = now.Add(time.Duration(g.env.Run.Options.BidWindowMS) * time.Millisecond)
			continue
		}
		d, err := g.claimFor(task, r, best.Note, best.Note.Score, board.LeaseID(best.Lease), "")
		if err != nil {
			g.env.Log.Warn("deciding", "task", task, "err", err)
			continue
		}
		recs[rec] = true
		d.bids = g.bids[task]
		for k, b := range g.bids[task] {
			d.ops = append(d.ops, board.DeleteOp(k))
			if k != best.Key {
				losers = append(losers, b)
			}
		}
		ds = append(ds, d)
		g.decided[task] = true
		g.forgetBids(task)
	}
	// A worker whose request lost asked for work it did not get: rather
	// than leave it to ask again (another round trip, and with many hosts
	// asking for the same first tasks, many), claim for it the first ready
	// task of the shard, in priority order, that nobody asked for and it
	// matches. decision: D-2
	if len(losers) > 0 {
		consoled := map[string]bool{}
		for _, c := range g.consolations(losers) {
			r := g.ready[c.task]
			if recs[recordOf(r.Note)] {
				continue
			}
			d, err := g.claimFor(c.task, r, c.bid.Note, c.score, board.LeaseID(c.bid.Lease), c.bid.Note.Task)
			if err != nil {
				continue
			}
			recs[recordOf(r.Note)] = true
			ds = append(ds, d)
			g.decided[c.task] = true
			consoled[c.bid.Key] = true
		}
		// The others are told, so that they ask again at once: hosts do
		// not follow the announcements' deletions.
		var told []board.Op
		seen := map[string]bool{}
		for _, l := range losers {
			key := layout.LostKey(g.env.Run.Run, l.Note.Host, l.Note.Worker)
			if consoled[l.Key] || seen[key] || l.Note.Host == "" {
				continue
			}
			seen[key] = true
			told = append(told, board.PutOp(key, layout.MustJSON(layout.LostNote{Task: l.Note.Task}), board.LeaseID(l.Lease)))
		}
		if len(told) > 0 {
			ds = append(ds, decision{task: "", ops: told})
		}
	}
	g.apply(ctx, ds)
}

// apply writes decisions in the background, batched up to the board's
// bound on a transaction; a batch that fails is tried one decision at a
// time, and a decision that fails alone is given up (its task is looked at
// again). One write is in flight at a time: the requests that arrive
// meanwhile are decided together next, so the busier the board, the
// larger — not the more — the gatekeeper's transactions. Results are
// applied on the gatekeeper's loop.
func (g *gatekeeper) apply(ctx context.Context, ds []decision) {
	if len(ds) == 0 {
		return
	}
	g.writing = true
	g.spawn(func() {
		type result struct {
			d   decision
			rev int64
			err error
		}
		var out []result
		for len(ds) > 0 {
			n, ifs, thens := 0, 1, 0
			for n < len(ds) {
				i, t := ds[n].size()
				if n > 0 && (ifs+i > board.MaxTxnOps || thens+t > board.MaxTxnOps) {
					break
				}
				ifs, thens = ifs+i, thens+t
				n++
			}
			rev, err := g.write(ctx, ds[:n])
			for _, d := range ds[:n] {
				r := result{d: d, rev: rev, err: err}
				if err != nil && n > 1 {
					r.rev, r.err = g.write(ctx, []decision{d})
				}
				out = append(out, r)
			}
			ds = ds[n:]
		}
		g.post(ctx, func() {
			g.writing = false
			now := g.env.Clock.Now()
			for _, r := range out {
				if r.err != nil {
					g.failed(ctx, now, r.d, r.err)
				} else {
					g.succeeded(r.d, r.rev, now)
				}
			}
		})
	})
}

// write applies ds in one transaction under the leadership and returns
// its revision.
func (g *gatekeeper) write(ctx context.Context, ds []decision) (int64, error) {
	var specs []board.ClaimSpec
	t := board.Txn{If: []board.Cmp{g.lead.Guard()}}
	for _, d := range ds {
		if d.claim != nil {
			specs = append(specs, *d.claim)
		}
		t.If = append(t.If, d.conds...)
		t.Then = append(t.Then, d.ops...)
	}
	var res board.TxnResult
	if len(specs) == 0 {
		r, err := g.env.Store.Txn(ctx, t)
		if err != nil {
			return 0, err
		}
		res = r
	} else {
		r, err := g.env.Store.ClaimOn(ctx, specs, t)
		if err != nil {
			return 0, err
		}
		res = r.TxnResult
	}
	if !res.Succeeded {
		return 0, errDecisionRefused
	}
	return res.Revision, nil
}

// succeeded applies a decision written at rev.
func (g *gatekeeper) succeeded(d decision, rev int64, now time.Time) {
	if d.claim == nil {
		return
	}
	// The claim is the gatekeeper's own: it knows its marker.
	delete(g.ready, d.task)
	g.claimed(d.task, d.marker, rev, now)
	// The record moved: announcements of other attempts of the same task
	// carry the new one.
	for task, r := range g.ready {
		if r.Note.Of == d.rec {
			r.Note.Record, r.Rev = d.val, rev
			g.ready[task] = r
		}
	}
}

var errDecisionRefused = errors.New("swarm: a gatekeeper's decision was refused")

// failed gives up a decision that err refused: its requests are put back
// (but for the winner's, when its host's lease is gone) and its task
// looked at again after a bid window — its record read again, since the
// announcement's copy may be what was refused.
func (g *gatekeeper) failed(ctx context.Context, now time.Time, d decision, err error) {
	g.env.Log.Debug("a decision failed", "task", d.task, "err", err)
	delete(g.decided, d.task)
	if d.claim == nil {
		return
	}
	if len(d.bids) > 0 {
		m := g.bids[d.task]
		if m == nil {
			m = map[string]layout.BidSeen{}
			g.bids[d.task] = m
		}
		for k, b := range d.bids {
			if !errors.Is(err, board.ErrLeaseExpired) || board.LeaseID(b.Lease) != d.claim.Lease {
				m[k] = b
			}
		}
		if len(m) == 0 {
			delete(g.bids, d.task)
		} else {
			g.bidSince[d.task] = now
		}
	}
	r, ok := g.ready[d.task]
	if !ok {
		return
	}
	t, err := g.env.Store.Task(ctx, d.rec)
	if err != nil {
		return
	}
	p, err := layout.DecodePayload(t)
	if err != nil {
		return
	}
	stillReady := t.Status == board.TaskReady
	if r.Note.Of != "" {
		stillReady = t.Status == board.TaskRunning && p.Live != nil && p.Live.Open(r.Note.Slot)
	}
	if !stillReady {
		delete(g.ready, d.task)
		g.wd.Claimed(d.task)
		return
	}
	val, err := layout.EncodeTask(t, p)
	if err != nil {
		return
	}
	r.Note.Record, r.Rev = val, t.Revision
	g.ready[d.task] = r
	if len(g.bids[d.task]) > 0 {
		g.deadline[d.task] = now.Add(time.Duration(g.env.Run.Options.BidWindowMS) * time.Millisecond)
	}
}

// forgetBids drops the requests for task from the gatekeeper's view once a
// decision deletes them, so that a request arriving later is seen alone —
// and judged late — rather than with the ones already decided.
func (g *gatekeeper) forgetBids(task string) {
	delete(g.bids, task)
	delete(g.deadline, task)
	delete(g.bidSince, task)
}

// recordOf names the task record an announcement's claim moves.
func recordOf(n layout.ReadyNote) string {
	if n.Of != "" {
		return n.Of
	}
	return n.Task
}

// claimFor is the decision that claims the announced task for the worker
// of bid n, on its host's lease: the claim, the task's record moved to
// running (or the speculative attempt's slot to running) at the revision
// the announcement carries, the run marker, the grant in the host's inbox
// and the announcement deleted — one transaction, so that the claim, the
// record and the marker can never disagree.
func (g *gatekeeper) claimFor(task string, r layout.ReadyAt, n layout.BidNote, score float64, lease board.LeaseID, answers string) (decision, error) {
	if len(r.Note.Record) == 0 {
		return decision{}, layout.ErrNoRecord
	}
	t, err := board.DecodeTask(board.KV{Key: board.TaskKey(recordOf(r.Note)), Value: r.Note.Record, ModRevision: r.Rev})
	if err != nil {
		return decision{}, err
	}
	p, err := layout.DecodePayload(t)
	if err != nil {
		return decision{}, err
	}
	m := layout.RunMarker{Worker: n.Worker, Host: n.Host, Lease: lease, Of: r.Note.Of, Slot: r.Note.Slot}
	if err := layout.ClaimRecord(&t, p, m); err != nil {
		return decision{}, err
	}
	if m.Slot == 0 {
		m.Spec = p.Spec
	}
	val, err := layout.EncodeTask(t, p)
	if err != nil {
		return decision{}, err
	}
	run, s := g.env.Run.Run, g.shard
	grant := layout.GrantNote{Task: task, Worker: n.Worker, Score: score, Shard: s, Record: val, Of: r.Note.Of, Slot: r.Note.Slot, For: answers}
	return decision{task: task, rec: t.ID, val: val, marker: m,
		claim: &board.ClaimSpec{Task: task, Agent: n.Worker, Score: score, Lease: lease},
		conds: []board.Cmp{board.ModifiedAt(board.TaskKey(t.ID), r.Rev)},
		ops: []board.Op{board.PutOp(board.TaskKey(t.ID), val, board.NoLease),
			board.PutOp(layout.MarkerKey(run, s, task), layout.MustJSON(m), board.NoLease),
			board.PutOp(layout.InboxKey(run, n.Host, task), layout.MustJSON(grant), lease),
			board.DeleteOp(layout.ReadyKey(run, s, task))},
	}, nil
}

// consolation is a ready task claimed for a worker whose request lost.
type consolation struct {
	task  string
	bid   layout.BidSeen
	score float64
}

// consolations pairs losing requests, earliest first, with the shard's
// ready tasks nobody asked for, in priority order: each loser gets the
// first it matches. Requests that predate skills in bids (no skills, no
// profile) match untagged tasks only. Speculative attempts are not handed
// out: they are for whoever asks.
func (g *gatekeeper) consolations(losers []layout.BidSeen) []consolation {
	var free []string
	for t, r := range g.ready {
		if len(g.bids[t]) == 0 && !g.decided[t] && !g.opens[t] && r.Note.Of == "" {
			if _, running := g.running[t]; !running {
				free = append(free, t)
			}
		}
	}
	if len(free) == 0 {
		return nil
	}
	less := func(a, b string) bool { return layout.ReadyBefore(a, b, g.ready[a].Note, g.ready[b].Note) }
	slices.SortFunc(free, func(a, b string) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	slices.SortFunc(losers, func(a, b layout.BidSeen) int { return cmp.Compare(a.Rev, b.Rev) })
	var out []consolation
	used := map[string]bool{}
	for _, l := range losers {
		for _, t := range free {
			n := g.ready[t].Note
			if used[t] || !layout.Matches(l.Note.Skills, n.Tags) {
				continue
			}
			used[t] = true
			out = append(out, consolation{task: t, bid: l,
				score: layout.Competence(l.Note.Skills, l.Note.Profile, layout.History{}, n.Tags, n.Agent)})
			break
		}
	}
	return out
}

func values(m map[string]layout.BidSeen) []layout.BidSeen {
	out := make([]layout.BidSeen, 0, len(m))
	for _, b := range m {
		out = append(out, b)
	}
	return out
}
