package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/proc"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
	"github.com/apiary-dev/apiary/internal/swarm/policy"
)

// A host is one worker process (`apiary worker`): it runs one or more
// workers — identities with skills, an agent profile and slots — on the
// runs published on a board. For each active run it keeps one lease, its
// session: its entry under hosts/, its workers' registry entries, their
// claim requests and every claim made for them are bound to it, so its one
// keep-alive keeps them all and they end together when the host does. It
// follows the ready announcements of the shards the live hosts assign it
// (shard_follow.go), asks those shards' gatekeepers for the tasks its
// workers score best on, campaigns to be their gatekeeper (and, if
// configured, the merge role), and runs what arrives in its inbox: tasks
// claimed for its workers, watchdog offers, cancellations. decision: D-7

// WorkerSpec is one worker identity a host runs.
type WorkerSpec struct {
	ID      string
	Skills  []string
	Profile string // the agent profile it runs tasks with
	Slots   int    // tasks at once; default 1
}

// Executor does the work of a claimed task.
type Executor interface {
	Execute(ctx context.Context, j *Job) (Outcome, error)
}

// Job is one claimed attempt of a task.
type Job struct {
	Run      *layout.Record
	TaskID   string // board id (RUN/NAME)
	Name     string
	Attempt  int
	Envelope *envelope.Envelope // the task's template
	Tags     []string
	WorkS    float64 // simulated work (benchmarks)
	Worker   WorkerSpec
	// Claim is the attempt's own claim, on its host's lease; Fence the
	// task's fencing token, which its commits carry. They differ for a
	// speculative attempt (Slot > 0), whose claim only says it is alive
	// while it works under the task's claim.
	Claim    board.Claim
	Fence    int64
	Slot     int
	Hints    []board.Hint // approved resolution hints
	Intent   *board.Intent
	Declared []string // tasks this attempt declared a conflict with
}

// Outcome is how an attempt ended.
type Outcome struct {
	// Done: the task is complete with nothing to integrate (simulated work).
	Done bool
	// Candidate: finished work for the merge role to integrate.
	Candidate *layout.Candidate
	// Failed: the attempt failed (the agent, a gate); the task is retried
	// while it has attempts left. Gate marks a gate rejection.
	Failed string
	Gate   bool
	// Usage is what the attempt spent, whatever its outcome.
	Usage envelope.Usage
}

// HostConfig configures RunHost.
type HostConfig struct {
	Store   *board.Store
	Host    string // this process's id; default the first worker's
	Workers []WorkerSpec
	Exec    Executor
	// Run restricts the host to one run; UntilFinished makes RunHost return
	// once that run has finished.
	Run           string
	UntilFinished bool
	// Merge, if set, makes the host a candidate for each run's merge role.
	Merge *MergeConfig
	// TTL is the host's lease (default 10s).
	TTL time.Duration
	// Prefetch lets each worker ask for up to this many tasks beyond its
	// free slots, so that a short task's successor is claimed while it
	// runs (benchmarks); for work that takes longer than a claim's round
	// trip it only makes claimed tasks wait. Default 0.
	Prefetch int
	Policy   policy.Config
	// Load samples the machine's CPU load (0–1) once a second; nil: none.
	Load   func() float64
	Clock  board.Clock
	Logger *slog.Logger
}

func (c *HostConfig) defaults() error {
	if c.Store == nil || len(c.Workers) > 0 && c.Exec == nil || len(c.Workers) == 0 && c.Merge == nil {
		return fmt.Errorf("%w: a host needs a store, and workers with an executor or the merge role", layout.ErrConfig)
	}
	// Agents and checks run in contained processes; where the platform
	// cannot contain them (proc.Supported) a host that would claim tasks or
	// merge them refuses before it joins the board.
	if _, git := c.Exec.(*GitExecutor); git && len(c.Workers) > 0 || c.Merge != nil {
		if err := proc.Supported(); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for i := range c.Workers {
		w := &c.Workers[i]
		if w.ID == "" || seen[w.ID] {
			return fmt.Errorf("%w: worker ids must be unique and non-empty", layout.ErrConfig)
		}
		seen[w.ID] = true
		if w.Slots <= 0 {
			w.Slots = 1
		}
	}
	c.Prefetch = max(c.Prefetch, 0)
	if c.Host == "" && len(c.Workers) > 0 {
		c.Host = c.Workers[0].ID
	}
	if c.Host == "" {
		return fmt.Errorf("%w: a host without workers needs a Host id", layout.ErrConfig)
	}
	if c.TTL <= 0 {
		c.TTL = 10 * time.Second
	}
	if c.Clock == nil {
		c.Clock = board.SystemClock()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.UntilFinished && c.Run == "" {
		return fmt.Errorf("%w: UntilFinished needs Run", layout.ErrConfig)
	}
	return nil
}

// RunHost serves the board's active runs (or cfg.Run) until ctx ends, or,
// with UntilFinished, until cfg.Run has finished.
func RunHost(ctx context.Context, cfg HostConfig) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type served struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	if c, ok := cfg.Exec.(interface{ Close(context.Context) error }); ok {
		// After every run's workers have stopped (the Wait below runs
		// first): the executor's idle worktrees go with the host.
		defer func() {
			cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), attempt.CleanupTimeout)
			defer ccancel()
			if err := c.Close(cctx); err != nil {
				cfg.Logger.Warn("closing the executor", "err", err)
			}
		}()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	serving := map[string]*served{}
	runs := map[string]*layout.Record{}
	updates, err := layout.Follow(ctx, cfg.Store, layout.PrefixRuns, func(ev board.Event) {
		if ev.Type != board.EventPut {
			return
		}
		if r, err := layout.DecodeRun(board.KV{Key: ev.Key, Value: ev.Value, ModRevision: ev.Revision}); err == nil {
			runs[r.Run] = r
		}
	})
	if err != nil {
		return err
	}
	for {
		for id, r := range runs {
			s := serving[id]
			switch {
			case cfg.Run != "" && id != cfg.Run:
			case r.Status == layout.RunActive && s == nil:
				rctx, rcancel := context.WithCancel(ctx)
				s = &served{cancel: rcancel, done: make(chan struct{})}
				serving[id] = s
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer close(s.done)
					serveRun(rctx, &cfg, r)
				}()
			case r.Status == layout.RunFinished:
				if s != nil {
					s.cancel()
				}
				if cfg.UntilFinished && id == cfg.Run {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case f, ok := <-updates:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("swarm: the board's run watch ended")
			}
			f()
		}
	}
}

// serveRun serves one run until ctx ends, starting over after losing the
// host lease.
func serveRun(ctx context.Context, cfg *HostConfig, r *layout.Record) {
	for ctx.Err() == nil {
		err := serveOnce(ctx, cfg, r)
		if ctx.Err() != nil {
			return
		}
		cfg.Logger.Warn("serving run again", "run", r.Run, "err", err)
		select {
		case <-ctx.Done():
		case <-cfg.Clock.After(time.Second):
		}
	}
}

// hostWorker is one worker's state, owned by the host loop.
type hostWorker struct {
	spec    WorkerSpec
	busy    int
	history layout.History
	recent  []bool // last attempts, newest last: true = succeeded
	policy  *policy.Worker
	// queue holds what arrived for the worker while its slots were taken:
	// tasks claimed for it (prefetched, or granted twice) and offers.
	queue []inboxItem
	idle  int  // free slots with no request out, after the last round
	dirty bool // registry entry out of date
}

// free is the worker's slots not running, queued or asked for.
func (w *hostWorker) free(bids int) int { return w.spec.Slots - w.busy - len(w.queue) - bids }

// inboxItem is a grant or an offer for one of the host's workers, or an
// open task the host takes: the note and the revision it arrived at.
type inboxItem struct {
	g   layout.GrantNote
	rev int64
	// claimed: the claim is made (a grant), so rev is its token; else the
	// host claims the task itself (an offer, an open task), at the
	// record's revision g.Rev, deleting the key it came through.
	claimed bool
	via     string
}

type outBid struct {
	worker *hostWorker
	since  time.Time
	shard  int
}

// hostState is one host serving one run. Its fields belong to the loop
// goroutine unless noted.
type hostState struct {
	env     *runEnv
	cfg     *HostConfig
	sess    *board.Session
	commit  *committer // writes the host's transactions, merging those that wait
	workers []*hostWorker
	byID    map[string]*hostWorker

	hosts     map[string]string           // hosts/ key of a live host with workers -> the host
	shards    map[int]*followedShard      // the shards this host follows
	ready     map[string]layout.ReadyNote // task -> announcement, of followed shards
	asked     map[string]bool             // tasks of ready a worker of this host asked for
	shardOf   map[string]int              // task -> shard, for ready and open tasks
	opens     map[string]layout.GrantNote // open tasks, as claimable notes
	tried     map[string]time.Time        // open tasks: when this host last tried one
	started   map[string]bool             // claim ids this host is working on
	cancels   map[string]func()           // claim id -> cancel its attempt
	cancelled map[string]bool             // claim ids cancelled before they started
	cooldown  bool
	divideAt  time.Time          // the live hosts changed: follow the shards again then
	watchErr  error              // a watch ended: serve the run again
	bids      map[string]*outBid // task -> this host's request

	events  chan func() // from every watch, applied on the loop
	results chan workResult
	freeing chan freeReq   // work whose attempt is done frees its slot
	applies chan func()    // from background writes: changes to make on the loop
	writing bool           // a registry write is under way
	wg      sync.WaitGroup // work goroutines, gatekeepers, merge role, watches
}

// followedShard is a shard this host follows: its announcement watch and
// its gatekeeper campaign, stopped together when the shard moves.
type followedShard struct {
	stop context.CancelFunc
}

// workResult is a finished work goroutine's report.
type workResult struct {
	w    *hostWorker
	task string // claim id
	tags []string
	ran  bool // an attempt actually ran
	ok   bool
	// freed: the slot was freed already (freeSlot), before the outcome
	// was recorded. stale: an offer or open task whose record had moved
	// from this revision (it is not tried again).
	freed bool
	stale int64
}

// bidTimeout is how long a claim request waits for a decision before the
// worker withdraws it and asks again.
const bidTimeout = 3 * time.Second

func serveOnce(ctx context.Context, cfg *HostConfig, r *layout.Record) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	env := &runEnv{st: cfg.Store, run: r, clock: cfg.Clock, log: cfg.Logger.With("run", r.Run, "host", cfg.Host), host: cfg.Host}
	sess, err := cfg.Store.NewSession(ctx, cfg.TTL)
	if err != nil {
		return err
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer ccancel()
		_ = sess.Close(cctx)
	}()
	h := &hostState{env: env, cfg: cfg, sess: sess, byID: map[string]*hostWorker{}, hosts: map[string]string{},
		shards: map[int]*followedShard{}, ready: map[string]layout.ReadyNote{}, asked: map[string]bool{}, shardOf: map[string]int{},
		opens: map[string]layout.GrantNote{}, tried: map[string]time.Time{}, started: map[string]bool{}, cancels: map[string]func(){}, cancelled: map[string]bool{},
		bids: map[string]*outBid{}, events: make(chan func()), results: make(chan workResult), freeing: make(chan freeReq), applies: make(chan func())}
	for _, spec := range cfg.Workers {
		w := &hostWorker{spec: spec, policy: policy.New(cfg.Policy, cfg.Clock.Now), dirty: true}
		h.workers = append(h.workers, w)
		h.byID[spec.ID] = w
	}
	defer h.wg.Wait()
	defer cancel()
	h.commit = newCommitter(ctx, cfg.Store, h.spawn)
	if err := h.register(ctx); err != nil {
		return err
	}
	if cfg.Merge != nil && r.Remote != "" {
		h.spawn(func() {
			h.campaign(ctx, layout.MergeRole(r.Run), func(lctx context.Context, l *board.Leadership) error {
				return runMerge(lctx, env, cfg.Merge, l)
			})
		})
	}
	run := r.Run
	if err := h.watch(ctx, layout.CooldownKey(run), board.WatchOptions{}, func(evs []board.Event) {
		for _, ev := range evs {
			h.cooldown = ev.Type == board.EventPut
		}
	}); err != nil {
		return err
	}
	if err := h.watch(ctx, layout.HostsPrefix(run), board.WatchOptions{}, h.onHosts); err != nil {
		return err
	}
	if err := h.watch(ctx, layout.OpenPrefix(run), board.WatchOptions{}, h.onOpen); err != nil {
		return err
	}
	// The host deletes its inbox entries itself, in the transactions that
	// end its attempts: it needs no deletions.
	if err := h.watch(ctx, layout.InboxPrefix(run, cfg.Host), board.WatchOptions{NoDelete: true}, func(evs []board.Event) {
		for _, ev := range evs {
			h.onInbox(ctx, ev)
		}
	}); err != nil {
		return err
	}
	tick := time.Second / 10
	nextLoad, nextRegister := cfg.Clock.Now(), cfg.Clock.Now()
	for {
		h.schedule(ctx)
		h.markIdle()
		now := cfg.Clock.Now()
		if cfg.Load != nil && !now.Before(nextLoad) {
			nextLoad = now.Add(time.Second)
			load := cfg.Load()
			for _, w := range h.workers {
				was, _ := w.policy.Overloaded()
				w.policy.ObserveCPU(load)
				if over, _ := w.policy.Overloaded(); over != was {
					w.dirty = true
				}
			}
		}
		if !now.Before(nextRegister) && !h.writing {
			nextRegister = now.Add(time.Second)
			h.registerLater(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-sess.Done():
			return fmt.Errorf("host lease lost: %w", layout.ErrLost)
		case f, ok := <-h.events:
			if !ok {
				return layout.ErrWatchEnded(ctx)
			}
			f()
		case res := <-h.results:
			h.finished(res)
		case r := <-h.freeing:
			h.freed(r)
		case f := <-h.applies:
			f()
		case <-cfg.Clock.After(h.wait(tick)):
		}
		if h.watchErr != nil {
			return h.watchErr
		}
		if !h.divideAt.IsZero() && !cfg.Clock.Now().Before(h.divideAt) {
			if err := h.refollow(ctx); err != nil {
				return err
			}
		}
	}
}

// watch follows prefix (see followBatches), applying every change on the
// loop; it ends with ctx. A watch that fails ends the host's session of
// the run (serveRun starts over).
func (h *hostState) watch(ctx context.Context, prefix string, opts board.WatchOptions, apply func([]board.Event)) error {
	ch, err := layout.FollowBatches(ctx, h.env.st, prefix, opts, apply)
	if err != nil {
		return err
	}
	h.spawn(func() {
		for f := range ch {
			select {
			case h.events <- f:
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() == nil {
			select {
			case h.events <- func() { h.watchErr = fmt.Errorf("swarm: the watch of %s ended", prefix) }:
			case <-ctx.Done():
			}
		}
	})
	return nil
}

// wait is how long the loop may sleep: tick, or less when the shards are
// due to be divided.
func (h *hostState) wait(tick time.Duration) time.Duration {
	if !h.divideAt.IsZero() {
		return max(min(tick, h.divideAt.Sub(h.env.clock.Now())), time.Millisecond)
	}
	return tick
}

// drain applies whatever the watches have already delivered, so decisions
// are made on the freshest view.
func (h *hostState) drain() {
	for {
		select {
		case f := <-h.events:
			f()
		default:
			return
		}
	}
}

// spawn runs f as a goroutine the host waits for.
func (h *hostState) spawn(f func()) {
	h.wg.Go(f)
}

// campaign keeps this host a candidate for role, serving it whenever it
// leads, until ctx ends.
func (h *hostState) campaign(ctx context.Context, role string, serve func(context.Context, *board.Leadership) error) {
	for ctx.Err() == nil {
		l, err := h.env.st.Campaign(ctx, role, h.env.host, h.cfg.TTL)
		if err != nil {
			if ctx.Err() == nil {
				h.env.log.Debug("campaign", "role", role, "err", err)
				select {
				case <-ctx.Done():
				case <-h.env.clock.After(200 * time.Millisecond):
				}
			}
			continue
		}
		h.env.log.Debug("leading", "role", role)
		if err := serve(ctx, l); err != nil && ctx.Err() == nil {
			h.env.log.Warn("role ended", "role", role, "err", err)
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = l.Resign(cctx)
		cancel()
	}
}

// onHosts applies changes to the set of live hosts, which divides the
// shards among them.
func (h *hostState) onHosts(evs []board.Event) {
	for _, ev := range evs {
		host, _, ok := layout.HostOfKey(h.env.run.Run, ev.Key)
		if !ok {
			continue
		}
		var e layout.HostEntry
		if ev.Type == board.EventPut && json.Unmarshal(ev.Value, &e) == nil && e.Workers > 0 {
			h.hosts[ev.Key] = host
		} else {
			delete(h.hosts, ev.Key) // gone, or a host with no workers: it takes no shards
		}
	}
	// Hosts tend to come and go together (a fleet starting, a machine
	// with several): the shards are divided again once the set has
	// been still for a moment, not at every entry.
	h.divideAt = h.env.clock.Now().Add(divideAfter)
}

// divideAfter is how long the set of live hosts must be still before the
// shards are divided again.
const divideAfter = 100 * time.Millisecond
