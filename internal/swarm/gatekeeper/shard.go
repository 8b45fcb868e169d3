package gatekeeper

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/supervise"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
	"github.com/apiary-dev/apiary/internal/swarm/policy"
)

// Env is what a gatekeeper shares with the other roles of its run in its
// process: the board, the run, the clock, the log and the host.
type Env struct {
	Store *board.Store
	Run   *layout.Record
	Clock board.Clock
	Log   *slog.Logger
	Host  string
}

// repairEvery is the period of a gatekeeper's repair scan; firstRepair
// when a new leader's first is.
const (
	repairEvery = 30 * time.Second
	firstRepair = 2 * time.Second
)

// staleBids is how long bids on a task that is not (or not yet seen as)
// ready are kept.
const staleBids = 2 * time.Second

// gkRun is a claimed task (or speculative attempt) of the shard, from its
// run marker.
type gkRun struct {
	m     layout.RunMarker
	token int64 // the marker's CreateRevision: the claim's fencing token
	since time.Time
}

// gkOffer is a watchdog offer this gatekeeper made: to a worker of host,
// of the task's record at rev.
type gkOffer struct {
	host   string
	record json.RawMessage
	rev    int64
}

type gatekeeper struct {
	env   *Env
	shard int
	lead  *board.Leadership

	ready    map[string]layout.ReadyAt // task -> announcement
	offers   map[string]gkOffer        // task -> this leader's watchdog offer
	opens    map[string]bool
	bids     map[string]map[string]layout.BidSeen // task -> bid key -> bid
	deadline map[string]time.Time                 // task -> when to decide its bids
	bidSince map[string]time.Time                 // task -> when its first pending bid was seen
	decided  map[string]bool                      // claimed or offered; the note is gone
	running  map[string]*gkRun                    // claim id -> its run marker (when tracking)
	// track: the gatekeeper follows its markers' deletions, to time the
	// attempts of a run with speculative tasks.
	track    bool
	dead     map[board.LeaseID]bool // host leases seen to end
	cooldown bool
	lastBid  time.Time // when the shard last saw a claim request
	wd       *policy.Watchdog
	repairAt time.Time
	// offered: when this gatekeeper last offered tasks to each worker, so
	// that offers spread over free slots until the worker's registry entry
	// (refreshed every second) shows them taken.
	offered map[string][]time.Time
	// durations are the shard's attempt times, from claim to outcome, for
	// hedges at a quantile; specAt is when each speculative task is due
	// its next attempts.
	durations supervise.Durations
	specAt    map[string]time.Time
	// writing: a decision write is in flight (apply); done carries the
	// results of background work to the loop; wg waits for that work.
	writing bool
	done    chan func()
	wg      sync.WaitGroup
}

// spawn runs f in the background; Run waits for it.
func (g *gatekeeper) spawn(f func()) { g.wg.Go(f) }

// post hands f to the gatekeeper's loop, unless ctx has ended.
func (g *gatekeeper) post(ctx context.Context, f func()) {
	select {
	case g.done <- f:
	case <-ctx.Done():
	}
}

func newGatekeeper(env *Env, shard int, lead *board.Leadership) *gatekeeper {
	o := env.Run.Options
	return &gatekeeper{env: env, shard: shard, lead: lead, ready: map[string]layout.ReadyAt{}, offers: map[string]gkOffer{},
		opens: map[string]bool{}, bids: map[string]map[string]layout.BidSeen{}, deadline: map[string]time.Time{},
		bidSince: map[string]time.Time{}, decided: map[string]bool{}, running: map[string]*gkRun{},
		dead: map[board.LeaseID]bool{}, offered: map[string][]time.Time{}, specAt: map[string]time.Time{}, track: o.Speculative, done: make(chan func()),
		wd: policy.NewWatchdog(layout.Secs(o.OfferAfterS), layout.Secs(o.OpenAfterS))}
}

// offersTo counts the offers made to w that its registry entry, updated at
// w.Updated, cannot show yet (at most two seconds old); older ones are
// forgotten.
func (g *gatekeeper) offersTo(w layout.WorkerRecord, now time.Time) int {
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

// Run serves shard as its gatekeeper until the leadership or ctx ends.
func Run(ctx context.Context, env *Env, shard int, lead *board.Leadership) error {
	g := newGatekeeper(env, shard, lead)
	defer g.wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(lead.Context(), cancel)()
	run := env.Run.Run
	// The gatekeeper deletes the announcements and requests it decides
	// itself, so it needs no deletions of them. It writes the run markers
	// of its claims itself too, and needs their deletions (the attempts'
	// ends) only to time the attempts its hedges are set by: in a run
	// without speculative tasks it lists them when it takes over, and
	// again when a host dies. The markers are listed before the hosts, so
	// that a marker whose host is not listed belongs to a host that is
	// gone. decision: D-7
	ready, err := layout.FollowBatches(ctx, env.Store, layout.ShardFeed(run, shard)+"ready/", board.WatchOptions{NoDelete: true}, g.onReady)
	if err != nil {
		return err
	}
	var markers <-chan func()
	var found map[string]*gkRun
	if g.track {
		if markers, err = layout.FollowBatches(ctx, env.Store, layout.MarkerPrefix(run, shard), board.WatchOptions{NoPut: true}, g.onMarkers); err != nil {
			return err
		}
		found = g.running
	} else if found, err = g.listMarkers(ctx); err != nil {
		return err
	}
	live := map[board.LeaseID]bool{}
	listed := false
	hosts, err := layout.FollowBatches(ctx, env.Store, layout.HostsPrefix(run), board.WatchOptions{NoPut: true}, func(evs []board.Event) {
		for _, ev := range evs {
			lease, ok := leaseOfHostKey(run, ev.Key)
			switch {
			case !ok:
			case !listed:
				live[lease] = true
			case ev.Type == board.EventDelete:
				g.hostDied(ctx, lease)
			}
		}
	})
	if err != nil {
		return err
	}
	listed = true
	for id, r := range found {
		if !live[r.m.Lease] {
			g.dead[r.m.Lease] = true
			g.lapsed(id, r)
		}
	}
	bids, err := layout.FollowBatches(ctx, env.Store, layout.BidPrefix(run, shard), board.WatchOptions{NoDelete: true}, func(evs []board.Event) {
		for _, ev := range evs {
			g.onBid(ev)
		}
	})
	if err != nil {
		return err
	}
	cool, err := layout.Follow(ctx, env.Store, layout.CooldownKey(run), func(ev board.Event) {
		g.cooldown = ev.Type == board.EventPut
	})
	if err != nil {
		return err
	}
	if kvs, _, err := env.Store.List(ctx, layout.OpenShard(run, shard)); err == nil {
		for _, kv := range kvs {
			g.opens[layout.LastSeg(kv.Key)] = true
		}
	}
	// What a crash left behind is repaired soon, not at once: a leader
	// that takes over at a run's start (hosts joining move the shards)
	// would otherwise read every task for nothing.
	g.repairAt = env.Clock.Now().Add(firstRepair)
	for {
		now := env.Clock.Now()
		g.decide(ctx, now)
		g.watch(ctx, now)
		g.speculateDue(ctx, now)
		if !now.Before(g.repairAt) {
			g.repair(ctx)
		}
		wait := g.repairAt.Sub(now)
		for _, d := range g.deadline {
			if !g.writing { // else the write's end wakes the loop
				wait = min(wait, d.Sub(now))
			}
		}
		for _, d := range g.specAt {
			wait = min(wait, d.Sub(now))
		}
		if n := g.wd.Next(); !n.IsZero() {
			wait = min(wait, n.Sub(now))
		}
		wait = max(wait, time.Millisecond)
		select {
		case <-ctx.Done():
			return nil
		case f, ok := <-ready:
			if !ok {
				return layout.ErrWatchEnded(ctx)
			}
			f()
		case f, ok := <-markers: // nil, never ready, when not tracking
			if !ok {
				return layout.ErrWatchEnded(ctx)
			}
			f()
		case f, ok := <-hosts:
			if !ok {
				return layout.ErrWatchEnded(ctx)
			}
			f()
		case f, ok := <-bids:
			if !ok {
				return layout.ErrWatchEnded(ctx)
			}
			f()
		case f, ok := <-cool:
			if !ok {
				return layout.ErrWatchEnded(ctx)
			}
			f()
		case f := <-g.done:
			f()
		case <-env.Clock.After(wait):
		}
	}
}

// leaseOfHostKey reads the lease of a hosts/HOST/LEASE key.
func leaseOfHostKey(run, key string) (board.LeaseID, bool) {
	_, hex, ok := layout.HostOfKey(run, key)
	if !ok {
		return board.NoLease, false
	}
	n, err := strconv.ParseInt(hex, 16, 64)
	if err != nil {
		return board.NoLease, false
	}
	return board.LeaseID(n), true
}

// onReady applies announcements of ready tasks.
func (g *gatekeeper) onReady(evs []board.Event) {
	now := g.env.Clock.Now()
	for _, ev := range evs {
		if ev.Type != board.EventPut {
			continue
		}
		var n layout.ReadyNote
		if json.Unmarshal(ev.Value, &n) != nil {
			continue
		}
		task := layout.LastSeg(ev.Key)
		rev := n.Rev
		if rev == 0 {
			rev = ev.Revision
		}
		g.ready[task] = layout.ReadyAt{Note: n, Rev: rev}
		delete(g.decided, task)
		if _, claimed := g.running[task]; !claimed && n.Of == "" {
			g.wd.Ready(task, now)
		}
	}
}

// onMarkers applies claims starting and attempts ending in the shard.
func (g *gatekeeper) onMarkers(evs []board.Event) {
	now := g.env.Clock.Now()
	for _, ev := range evs {
		id := layout.LastSeg(ev.Key)
		if ev.Type == board.EventDelete {
			if r := g.running[id]; r != nil {
				g.durations.Observe(now.Sub(r.since))
			}
			delete(g.running, id)
			delete(g.specAt, id)
			continue
		}
		var m layout.RunMarker
		if json.Unmarshal(ev.Value, &m) == nil {
			g.claimed(id, m, ev.CreateRevision, now)
		}
	}
}

// claimed records a claim of the shard — one of its own decisions, or a
// run marker it found — with its token: what runs is tracked only when
// the gatekeeper follows the markers' deletions (g.track).
func (g *gatekeeper) claimed(id string, m layout.RunMarker, token int64, now time.Time) {
	if _, ok := g.running[id]; ok {
		return
	}
	r := &gkRun{m: m, token: token, since: now}
	g.wd.Claimed(id)
	delete(g.opens, id)
	delete(g.offers, id)
	if g.dead[m.Lease] {
		g.lapsed(id, r)
		return
	}
	if !g.track {
		return
	}
	g.running[id] = r
	if m.Spec != nil && m.Slot == 0 {
		if d, ok := m.Spec.Delay(&g.durations); ok {
			g.specAt[id] = now.Add(d)
		}
	}
}

// hostDied puts back what the host of lease was running in the shard: its
// claims ended with the lease.
func (g *gatekeeper) hostDied(ctx context.Context, lease board.LeaseID) {
	g.dead[lease] = true
	found := g.running
	if !g.track {
		var err error
		if found, err = g.listMarkers(ctx); err != nil {
			g.env.Log.Warn("listing the claims of a host that ended", "err", err)
			return
		}
	}
	for id, r := range found {
		if r.m.Lease == lease {
			g.lapsed(id, r)
		}
	}
}

// listMarkers reads the shard's run markers.
func (g *gatekeeper) listMarkers(ctx context.Context) (map[string]*gkRun, error) {
	kvs, _, err := g.env.Store.List(ctx, layout.MarkerPrefix(g.env.Run.Run, g.shard))
	if err != nil {
		return nil, err
	}
	out := make(map[string]*gkRun, len(kvs))
	now := g.env.Clock.Now()
	for _, kv := range kvs {
		var m layout.RunMarker
		if json.Unmarshal(kv.Value, &m) == nil {
			out[layout.LastSeg(kv.Key)] = &gkRun{m: m, token: kv.CreateRevision, since: now}
		}
	}
	return out, nil
}

func (g *gatekeeper) onBid(ev board.Event) {
	task := layout.Unesc(strings.Split(strings.TrimPrefix(ev.Key, layout.BidPrefix(g.env.Run.Run, g.shard)), "/")[0])
	if ev.Type == board.EventDelete {
		if m := g.bids[task]; m != nil {
			delete(m, ev.Key)
			if len(m) == 0 {
				g.forgetBids(task)
			}
		}
		return
	}
	var n layout.BidNote
	if json.Unmarshal(ev.Value, &n) != nil {
		return
	}
	if g.bids[task] == nil {
		g.bids[task] = map[string]layout.BidSeen{}
	}
	g.bids[task][ev.Key] = layout.BidSeen{Note: n, Key: ev.Key, Rev: ev.CreateRevision, Lease: int64(ev.Lease)}
	now := g.env.Clock.Now()
	g.lastBid = now
	if _, ok := g.bidSince[task]; !ok {
		// The first request for the task opens its bid window.
		g.bidSince[task] = now
		g.deadline[task] = now.Add(time.Duration(g.env.Run.Options.BidWindowMS) * time.Millisecond)
	}
}

// lapsed handles a claim whose host died: if the attempt left no result,
// the task (or the speculative attempt) is put back.
func (g *gatekeeper) lapsed(id string, r *gkRun) {
	ctx, cancel := context.WithTimeout(g.lead.Context(), 10*time.Second)
	defer cancel()
	if err := g.requeueLapsed(ctx, id, r.token); err != nil && ctx.Err() == nil {
		g.env.Log.Warn("putting back a lapsed task", "task", id, "err", err)
	}
}

// requeueLapsed puts back the attempt under claim id with token if the
// claim is gone and its task still waits for that attempt's outcome.
func (g *gatekeeper) requeueLapsed(ctx context.Context, id string, token int64) error {
	task, slot := layout.ParentOf(id)
	t, err := g.env.Store.Task(ctx, task)
	if err != nil || t.Status != board.TaskRunning || t.Token != 0 {
		return err // no longer running, or its outcome is recorded
	}
	p, err := layout.DecodePayload(t)
	if err != nil {
		return err
	}
	if p.Live != nil {
		return g.slotLapsed(ctx, t, p, slot, id, token)
	}
	if layout.ClaimToken(t, p) != token {
		return nil
	}
	_, err = layout.Requeue(ctx, g.env.Store, g.env.Run, t, p, "the worker's host ended with the attempt unrecorded",
		[]board.Cmp{g.lead.Guard(), board.FenceIs(id, token), board.Absent(board.ClaimKey(id))},
		board.DeleteOp(layout.MarkerKey(g.env.Run.Run, g.shard, id)))
	return err
}

// reannounce puts a ready task back on the feed when it has no
// announcement (a crash between writes, an offer whose worker died).
func (g *gatekeeper) reannounce(task string) {
	ctx, cancel := context.WithTimeout(g.lead.Context(), 10*time.Second)
	defer cancel()
	t, err := g.env.Store.Task(ctx, task)
	if err != nil || t.Status != board.TaskReady {
		return
	}
	p, err := layout.DecodePayload(t)
	if err != nil {
		return
	}
	val, err := layout.EncodeTask(t, p)
	if err != nil {
		return
	}
	run, s := g.env.Run.Run, g.shard
	_, err = g.env.Store.Txn(ctx, board.Txn{
		If: []board.Cmp{g.lead.Guard(), board.ModifiedAt(board.TaskKey(task), t.Revision), board.Absent(board.ClaimKey(task)),
			board.Absent(layout.OpenKey(run, s, task))},
		Then: []board.Op{board.PutOp(layout.ReadyKey(run, s, task), layout.MustJSON(layout.NoteOf(t, p, val, t.Revision)), board.NoLease)},
	})
	if err != nil {
		g.env.Log.Debug("re-announcing", "task", task, "err", err)
	}
}

// repair scans the shard's tasks for what a crash or a missed event can
// leave behind: a pending task whose dependencies all ended, a ready task
// with no announcement, a running task whose claim is gone with no result.
func (g *gatekeeper) repair(ctx context.Context) {
	g.repairAt = g.env.Clock.Now().Add(repairEvery)
	run := g.env.Run.Run
	tasks, err := layout.RunTasks(ctx, g.env.Store, run)
	if err != nil {
		return
	}
	claims, _, err := g.env.Store.List(ctx, layout.RunClaimPrefix(run))
	if err != nil {
		return
	}
	held := map[string]bool{}
	for _, kv := range claims {
		if c, err := board.DecodeClaim(kv); err == nil {
			held[c.Task] = true
		}
	}
	status := make(map[string]board.TaskStatus, len(tasks))
	for _, t := range tasks {
		status[t.ID] = t.Status
	}
	ended := func(t board.Task) bool {
		for _, d := range t.Deps {
			if !layout.Terminal(status[d]) {
				return false
			}
		}
		return true
	}
	for _, t := range tasks {
		p, err := layout.DecodePayload(t)
		if err != nil || p.Shard != g.shard {
			continue
		}
		switch {
		case t.Status == board.TaskPending && ended(t):
			_ = layout.Promote(ctx, g.env.Store, g.env.Run, t.ID)
		case t.Status == board.TaskReady && !g.opens[t.ID] && !g.decided[t.ID]:
			if _, ok := g.ready[t.ID]; !ok {
				g.reannounce(t.ID)
			}
		case t.Status == board.TaskRunning && t.Token == 0 && !held[t.ID] && !p.Live.AnyHeld(t.ID, held):
			if err := g.requeueLapsed(ctx, t.ID, layout.ClaimToken(t, p)); err != nil {
				g.env.Log.Debug("repair", "task", t.ID, "err", err)
			}
		}
	}
}
