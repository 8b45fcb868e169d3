package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// A shard's gatekeeper is whichever host leads the shard's election
// (board.Campaign on swarm/RUN/shard/sNN). It alone decides who gets the
// shard's tasks: it collects claim requests for a bid window and grants
// each task to the best; it runs the watchdog; it puts back a task whose
// claim lapsed with no result (its worker died); and it repairs what a
// crash can leave half-done. Every write it makes is guarded by its
// election key, so a deposed gatekeeper cannot act.

// runEnv is what every role of one run in one process shares.
type runEnv struct {
	st    *board.Store
	run   *Record
	clock board.Clock
	log   *slog.Logger
	host  string
}

// repairEvery is the period of a gatekeeper's repair scan.
const repairEvery = 10 * time.Second

// staleBids is how long bids on a task that is not (or not yet seen as)
// ready are kept.
const staleBids = 2 * time.Second

type gkReady struct {
	note readyNote
	rev  int64
}

type gatekeeper struct {
	env   *runEnv
	shard int
	lead  *board.Leadership

	ready    map[string]gkReady // task -> announcement
	grants   map[string]int64   // task -> grant key ModRevision
	opens    map[string]bool
	bids     map[string]map[string]bidSeen // task -> bid key -> bid
	deadline map[string]time.Time          // task -> when to decide its bids
	bidSince map[string]time.Time          // task -> when its first pending bid was seen
	decided  map[string]bool               // granted; waiting for the watch to show it
	running  map[string]int64              // task -> token of its live claim (run marker)
	finished map[string]bool               // its worker recorded the attempt's outcome
	cooldown bool
	wd       *watchdog
	repairAt time.Time
	// offered: when this gatekeeper last offered tasks to each worker, so
	// that offers spread over free slots until the worker's registry entry
	// (refreshed every second) shows them taken.
	offered map[string][]time.Time
}

// offersTo counts the offers made to w that its registry entry, updated at
// w.Updated, cannot show yet (at most two seconds old); older ones are
// forgotten.
func (g *gatekeeper) offersTo(w WorkerRecord, now time.Time) int {
	keep := g.offered[w.Worker][:0]
	for _, at := range g.offered[w.Worker] {
		if now.Sub(at) < 2*time.Second {
			keep = append(keep, at)
		}
	}
	if len(keep) == 0 {
		delete(g.offered, w.Worker)
		return 0
	}
	g.offered[w.Worker] = keep
	n := 0
	for _, at := range keep {
		if !w.Updated.After(at) {
			n++
		}
	}
	return n
}

// runGatekeeper serves shard as its gatekeeper until the leadership or ctx
// ends.
func runGatekeeper(ctx context.Context, env *runEnv, shard int, lead *board.Leadership) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(lead.Context(), cancel)()
	o := env.run.Options
	g := &gatekeeper{env: env, shard: shard, lead: lead, ready: map[string]gkReady{}, grants: map[string]int64{},
		opens: map[string]bool{}, bids: map[string]map[string]bidSeen{}, deadline: map[string]time.Time{},
		decided: map[string]bool{}, bidSince: map[string]time.Time{}, running: map[string]int64{}, finished: map[string]bool{}, offered: map[string][]time.Time{}, wd: newWatchdog(secs(o.OfferAfterS), secs(o.OpenAfterS))}
	feed, err := followBatches(ctx, env.st, shardFeed(env.run.Run, shard), g.onFeed)
	if err != nil {
		return err
	}
	bids, err := follow(ctx, env.st, bidPrefix(env.run.Run, shard), g.onBid)
	if err != nil {
		return err
	}
	cool, err := follow(ctx, env.st, cooldownKey(env.run.Run), func(ev board.Event) {
		g.cooldown = ev.Type == board.EventPut
	})
	if err != nil {
		return err
	}
	now := env.clock.Now()
	for task := range g.ready {
		g.wd.ready(task, now)
	}
	g.repair(ctx)
	window := time.Duration(o.BidWindowMS) * time.Millisecond
	for {
		now := env.clock.Now()
		g.decide(ctx, now)
		g.watch(ctx, now)
		if !now.Before(g.repairAt) {
			g.repair(ctx)
		}
		wait := g.repairAt.Sub(now)
		for _, d := range g.deadline {
			wait = min(wait, d.Sub(now))
		}
		if n := g.wd.next(); !n.IsZero() {
			wait = min(wait, n.Sub(now))
		}
		wait = max(wait, time.Millisecond)
		select {
		case <-ctx.Done():
			return nil
		case f, ok := <-feed:
			if !ok {
				return errWatchEnded(ctx)
			}
			f()
		case f, ok := <-bids:
			if !ok {
				return errWatchEnded(ctx)
			}
			f()
			for task := range g.bids {
				if _, ok := g.bidSince[task]; !ok {
					g.bidSince[task] = env.clock.Now()
					g.deadline[task] = env.clock.Now().Add(window)
				}
			}
		case f, ok := <-cool:
			if !ok {
				return errWatchEnded(ctx)
			}
			f()
		case <-env.clock.After(wait):
		}
	}
}

func errWatchEnded(ctx context.Context) error {
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("swarm: a board watch ended")
}

// follow lists prefix, applies every key as a put, then streams later
// changes: each response becomes one func to run on the caller's goroutine
// (so the caller's state needs no lock). The channel closes when ctx ends
// or the watch fails.
func follow(ctx context.Context, st *board.Store, prefix string, apply func(board.Event)) (<-chan func(), error) {
	return followBatches(ctx, st, prefix, func(evs []board.Event) {
		for _, ev := range evs {
			apply(ev)
		}
	})
}

// followBatches is follow with whole responses: the events of one or more
// whole revisions at a time (the initial listing is one batch).
func followBatches(ctx context.Context, st *board.Store, prefix string, apply func([]board.Event)) (<-chan func(), error) {
	kvs, rev, err := st.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	evs := make([]board.Event, 0, len(kvs))
	for _, kv := range kvs {
		evs = append(evs, board.Event{Type: board.EventPut, Key: kv.Key, Value: kv.Value, Revision: kv.ModRevision,
			CreateRevision: kv.CreateRevision, Lease: kv.Lease})
	}
	apply(evs)
	out := make(chan func())
	ch := st.Watch(ctx, prefix, rev+1)
	go func() {
		defer close(out)
		for resp := range ch {
			if resp.Err != nil {
				return
			}
			evs := resp.Events
			select {
			case out <- func() { apply(evs) }:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// lastSeg returns the unescaped last segment of key.
func lastSeg(key string) string {
	s := key[strings.LastIndexByte(key, '/')+1:]
	return unesc(s)
}

// onFeed applies a batch of the shard feed's changes. A grant deleted in
// the same batch as its task's run marker appeared was taken; a grant that
// vanished otherwise (its winner's process died before claiming) is put
// back on the feed.
func (g *gatekeeper) onFeed(evs []board.Event) {
	taken := map[string]bool{}
	for _, ev := range evs {
		if kind, task := g.feedKey(ev.Key); kind == "run" && ev.Type == board.EventPut {
			taken[task] = true
		}
	}
	now := g.env.clock.Now()
	for _, ev := range evs {
		kind, task := g.feedKey(ev.Key)
		put := ev.Type == board.EventPut
		switch {
		case kind == "ready" && put:
			var n readyNote
			if json.Unmarshal(ev.Value, &n) == nil {
				g.ready[task] = gkReady{note: n, rev: ev.Revision}
				delete(g.decided, task)
				if _, claimed := g.running[task]; !claimed {
					g.wd.ready(task, now)
				}
			}
		case kind == "ready":
			delete(g.ready, task)
			delete(g.decided, task)
		case kind == "grant" && put:
			g.grants[task] = ev.Revision
		case kind == "grant":
			delete(g.grants, task)
			if _, claimed := g.running[task]; !claimed && !taken[task] && !g.opens[task] {
				g.reannounce(task)
			}
		case kind == "open" && put:
			g.opens[task] = true
		case kind == "open":
			delete(g.opens, task)
		case kind == "run" && put:
			var m runMarker
			if json.Unmarshal(ev.Value, &m) != nil {
				continue
			}
			if _, ok := g.running[task]; !ok {
				g.running[task] = m.Token
				g.wd.claimed(task)
				g.cleanup(task, m.Token)
			}
			if m.Finished {
				g.finished[task] = true
			}
		case kind == "run":
			token, ok := g.running[task]
			fin := g.finished[task]
			delete(g.running, task)
			delete(g.finished, task)
			if ok && !fin {
				g.lapsed(task, token)
			}
		}
	}
}

// feedKey splits a shard feed key into its kind and task.
func (g *gatekeeper) feedKey(key string) (kind, task string) {
	rest := strings.TrimPrefix(key, shardFeed(g.env.run.Run, g.shard))
	kind, _, _ = strings.Cut(rest, "/")
	return kind, lastSeg(key)
}

func (g *gatekeeper) onBid(ev board.Event) {
	task := unesc(strings.Split(strings.TrimPrefix(ev.Key, bidPrefix(g.env.run.Run, g.shard)), "/")[0])
	if ev.Type == board.EventDelete {
		if m := g.bids[task]; m != nil {
			delete(m, ev.Key)
			if len(m) == 0 {
				delete(g.bids, task)
				delete(g.deadline, task)
				delete(g.bidSince, task)
			}
		}
		return
	}
	var n bidNote
	if json.Unmarshal(ev.Value, &n) != nil {
		return
	}
	if g.bids[task] == nil {
		g.bids[task] = map[string]bidSeen{}
	}
	g.bids[task][ev.Key] = bidSeen{note: n, key: ev.Key, rev: ev.CreateRevision, lease: int64(ev.Lease)}
}

// cleanup removes announcements left for a task that is now claimed (an
// open task claimed by someone, a grant overtaken by the open phase), as
// long as that claim is live.
func (g *gatekeeper) cleanup(task string, token int64) {
	run, s := g.env.run.Run, g.shard
	var ops []board.Op
	if _, ok := g.ready[task]; ok {
		ops = append(ops, board.DeleteOp(readyKey(run, s, task)))
	}
	if g.opens[task] {
		ops = append(ops, board.DeleteOp(openKey(run, s, task)))
	}
	for k := range g.bids[task] {
		ops = append(ops, board.DeleteOp(k))
	}
	if len(ops) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(g.lead.Context(), 10*time.Second)
	defer cancel()
	_, err := g.env.st.Txn(ctx, board.Txn{If: []board.Cmp{g.lead.Guard(), board.HeldBy(task, token)}, Then: ops})
	if err != nil {
		g.env.log.Debug("gatekeeper cleanup", "task", task, "err", err)
	}
}

// lapsed handles a claim that ended: if the task is still running under
// it and left no result, its worker died — the task is put back.
func (g *gatekeeper) lapsed(task string, token int64) {
	ctx, cancel := context.WithTimeout(g.lead.Context(), 10*time.Second)
	defer cancel()
	if err := g.requeueLapsed(ctx, task, token); err != nil && ctx.Err() == nil {
		g.env.log.Warn("putting back a lapsed task", "task", task, "err", err)
	}
}

func (g *gatekeeper) requeueLapsed(ctx context.Context, task string, token int64) error {
	t, err := g.env.st.Task(ctx, task)
	if err != nil || t.Status != board.TaskRunning || t.Token != token {
		return err
	}
	if c, err := readCandidate(ctx, g.env.st, g.env.run.Run, task); err == nil && c.Token == token {
		return nil // finished: the merge role has it
	} else if err != nil && !errors.Is(err, board.ErrNotFound) {
		return err
	}
	p, err := decodePayload(t)
	if err != nil {
		return err
	}
	_, err = requeue(ctx, g.env.st, g.env.run, t, p, "the worker's claim lapsed with no result",
		[]board.Cmp{g.lead.Guard(), board.FenceIs(task, token), board.Absent(board.ClaimKey(task))})
	return err
}

// reannounce puts a ready task back on the feed after its grant vanished
// unclaimed (the winner's process died before claiming).
func (g *gatekeeper) reannounce(task string) {
	ctx, cancel := context.WithTimeout(g.lead.Context(), 10*time.Second)
	defer cancel()
	t, err := g.env.st.Task(ctx, task)
	if err != nil || t.Status != board.TaskReady {
		return
	}
	p, err := decodePayload(t)
	if err != nil {
		return
	}
	run, s := g.env.run.Run, g.shard
	_, err = g.env.st.Txn(ctx, board.Txn{
		If: []board.Cmp{g.lead.Guard(), board.ModifiedAt(board.TaskKey(task), t.Revision), board.Absent(board.ClaimKey(task)),
			board.Absent(openKey(run, s, task)), board.Absent(grantKey(run, s, task))},
		Then: []board.Op{board.PutOp(readyKey(run, s, task), mustJSON(noteOf(t, p)), board.NoLease)},
	})
	if err != nil {
		g.env.log.Debug("re-announcing", "task", task, "err", err)
	}
}

// repair scans the shard's tasks for what a crash can leave behind: a
// pending task whose dependencies all ended, a ready task with no
// announcement, a running task whose claim is gone with no result.
func (g *gatekeeper) repair(ctx context.Context) {
	g.repairAt = g.env.clock.Now().Add(repairEvery)
	tasks, err := runTasks(ctx, g.env.st, g.env.run.Run)
	if err != nil {
		return
	}
	for _, t := range tasks {
		p, err := decodePayload(t)
		if err != nil || p.Shard != g.shard {
			continue
		}
		_, claimed := g.running[t.ID]
		switch {
		case t.Status == board.TaskPending:
			_ = promote(ctx, g.env.st, g.env.run, t.ID)
		case t.Status == board.TaskReady && !claimed && !g.opens[t.ID] && g.grants[t.ID] == 0:
			if _, ok := g.ready[t.ID]; !ok {
				g.reannounce(t.ID)
			}
		case t.Status == board.TaskRunning && !claimed:
			if err := g.requeueLapsed(ctx, t.ID, t.Token); err != nil {
				g.env.log.Debug("repair", "task", t.ID, "err", err)
			}
		}
	}
}

// runTasks lists the run's tasks.
func runTasks(ctx context.Context, st *board.Store, run string) ([]board.Task, error) {
	kvs, _, err := st.List(ctx, runTaskPrefix(run))
	if err != nil {
		return nil, err
	}
	out := make([]board.Task, 0, len(kvs))
	for _, kv := range kvs {
		t, err := board.DecodeTask(kv)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
