package swarm

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// decide grants every task whose bid window has closed to its best bid, in
// one transaction (or one per task if that fails).
func (g *gatekeeper) decide(ctx context.Context, now time.Time) {
	if g.cooldown {
		return // no new claims until the merge role lifts the cool-down
	}
	type decision struct {
		task  string
		conds []board.Cmp
		ops   []board.Op
	}
	var ds []decision
	var losers []bidSeen
	run, s := g.env.run.Run, g.shard
	for task, d := range g.deadline {
		if now.Before(d) {
			continue
		}
		r, isReady := g.ready[task]
		best, ok := winner(values(g.bids[task]))
		if !ok {
			delete(g.deadline, task)
			continue
		}
		_, running := g.running[task]
		taken := g.decided[task] || g.grants[task] != 0 || g.opens[task] || running
		if !isReady && !taken && now.Sub(g.bidSince[task]) < staleBids {
			g.deadline[task] = now.Add(staleBids / 4) // the announcement may still be on its way
			continue
		}
		if !isReady || taken {
			// Requests for a task no longer up for grabs — most often ones
			// that arrived after it was granted: drop them, and their
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
		ops := []board.Op{grantOp(run, s, task, best.note, best.note.Score, best.lease), board.DeleteOp(readyKey(run, s, task))}
		for k, b := range g.bids[task] {
			ops = append(ops, board.DeleteOp(k))
			if k != best.key {
				losers = append(losers, b)
			}
		}
		ds = append(ds, decision{task: task, conds: []board.Cmp{board.ModifiedAt(readyKey(run, s, task), r.rev)}, ops: ops})
		g.decided[task] = true
		g.forgetBids(task)
	}
	// A worker whose request lost asked for work it did not get: rather
	// than leave it to ask again (another round trip, and with many hosts
	// asking for the same first tasks, many), grant it the first ready task
	// of the shard, in priority order, that nobody asked for and it matches.
	// decision: D-2
	if len(losers) > 0 {
		for _, c := range g.consolations(losers) {
			r := g.ready[c.task]
			ds = append(ds, decision{task: c.task, conds: []board.Cmp{board.ModifiedAt(readyKey(run, s, c.task), r.rev)},
				ops: []board.Op{grantOp(run, s, c.task, c.bid.note, c.score, c.bid.lease), board.DeleteOp(readyKey(run, s, c.task))}})
			g.decided[c.task] = true
		}
	}
	if len(ds) == 0 {
		return
	}
	apply := func(ds []decision) bool {
		t := board.Txn{If: []board.Cmp{g.lead.Guard()}}
		for _, d := range ds {
			t.If = append(t.If, d.conds...)
			t.Then = append(t.Then, d.ops...)
		}
		res, err := g.env.st.Txn(ctx, t)
		return err == nil && res.Succeeded
	}
	failed := func(d decision) {
		// Try again once the watches have caught up with whatever moved.
		delete(g.decided, d.task)
		if len(g.bids[d.task]) > 0 {
			g.deadline[d.task] = now.Add(time.Duration(g.env.run.Options.BidWindowMS) * time.Millisecond)
		}
	}
	for len(ds) > 0 {
		n, ops := 0, 0
		for n < len(ds) && (n == 0 || ops+len(ds[n].ops) <= 96) {
			ops += len(ds[n].ops)
			n++
		}
		if !apply(ds[:n]) {
			if n == 1 {
				failed(ds[0])
			}
			for _, d := range ds[:n] {
				if n > 1 && !apply([]decision{d}) {
					failed(d)
				}
			}
		}
		ds = ds[n:]
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

// grantOp grants task to the worker of bid n, bound to its host's lease.
func grantOp(run string, shard int, task string, n bidNote, score float64, lease int64) board.Op {
	grant := grantNote{Task: task, Worker: n.Worker, Host: n.Host, Score: score}
	return board.PutOp(grantKey(run, shard, task), mustJSON(grant), board.LeaseID(lease))
}

// consolation is a ready task granted to a worker whose request lost.
type consolation struct {
	task  string
	bid   bidSeen
	score float64
}

// consolations pairs losing requests, earliest first, with the shard's
// ready tasks nobody asked for, in priority order: each loser gets the
// first it matches. Requests that predate skills in bids (no skills, no
// profile) match untagged tasks only.
func (g *gatekeeper) consolations(losers []bidSeen) []consolation {
	var free []string
	for t := range g.ready {
		if len(g.bids[t]) == 0 && !g.decided[t] && !g.opens[t] && g.grants[t] == 0 {
			if _, running := g.running[t]; !running {
				free = append(free, t)
			}
		}
	}
	if len(free) == 0 {
		return nil
	}
	slices.SortFunc(free, cmpOf(func(a, b string) bool { return readyBefore(a, b, g.ready[a].note, g.ready[b].note) }))
	slices.SortFunc(losers, func(a, b bidSeen) int { return cmp.Compare(a.rev, b.rev) })
	var out []consolation
	used := map[string]bool{}
	for _, l := range losers {
		for _, t := range free {
			n := g.ready[t].note
			if used[t] || !Matches(l.note.Skills, n.Tags) {
				continue
			}
			used[t] = true
			out = append(out, consolation{task: t, bid: l,
				score: Competence(l.note.Skills, l.note.Profile, History{}, n.Tags, n.Agent)})
			break
		}
	}
	return out
}

func values(m map[string]bidSeen) []bidSeen {
	out := make([]bidSeen, 0, len(m))
	for _, b := range m {
		out = append(out, b)
	}
	return out
}
