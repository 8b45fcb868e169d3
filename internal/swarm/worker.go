package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
)

// A host is one worker process (`apiary worker`): it runs one or more
// workers — identities with skills, an agent profile and slots — on the
// runs published on a board. For each active run it keeps one lease (its
// workers' registry entries, claim requests and grants are bound to it),
// follows the run's feed of ready tasks with one watch, asks the shard
// gatekeepers for the tasks its workers score best on, campaigns to be a
// gatekeeper of every shard (and, if configured, the merge role), and runs
// the tasks it is granted.

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
	Run      *Record
	TaskID   string // board id (RUN/NAME)
	Name     string
	Attempt  int
	Envelope *envelope.Envelope // the task's template
	Tags     []string
	WorkS    float64 // simulated work (benchmarks)
	Worker   WorkerSpec
	Claim    board.Claim
	Hints    []board.Hint // approved resolution hints
	Intent   *board.Intent
	Declared []string // tasks this attempt declared a conflict with
}

// Outcome is how an attempt ended.
type Outcome struct {
	// Done: the task is complete with nothing to integrate (simulated work).
	Done bool
	// Candidate: finished work for the merge role to integrate.
	Candidate *Candidate
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
	TTL    time.Duration
	Policy PolicyConfig
	// Load samples the machine's CPU load (0–1) once a second; nil: none.
	Load   func() float64
	Clock  board.Clock
	Logger *slog.Logger
}

func (c *HostConfig) defaults() error {
	if c.Store == nil || len(c.Workers) > 0 && c.Exec == nil || len(c.Workers) == 0 && c.Merge == nil {
		return fmt.Errorf("%w: a host needs a store, and workers with an executor or the merge role", ErrConfig)
	}
	seen := map[string]bool{}
	for i := range c.Workers {
		w := &c.Workers[i]
		if w.ID == "" || seen[w.ID] {
			return fmt.Errorf("%w: worker ids must be unique and non-empty", ErrConfig)
		}
		seen[w.ID] = true
		if w.Slots <= 0 {
			w.Slots = 1
		}
	}
	if c.Host == "" && len(c.Workers) > 0 {
		c.Host = c.Workers[0].ID
	}
	if c.Host == "" {
		return fmt.Errorf("%w: a host without workers needs a Host id", ErrConfig)
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
		return fmt.Errorf("%w: UntilFinished needs Run", ErrConfig)
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
	var wg sync.WaitGroup
	defer wg.Wait()
	serving := map[string]*served{}
	runs := map[string]*Record{}
	updates, err := follow(ctx, cfg.Store, prefixRuns, func(ev board.Event) {
		if ev.Type != board.EventPut {
			return
		}
		if r, err := decodeRun(board.KV{Key: ev.Key, Value: ev.Value, ModRevision: ev.Revision}); err == nil {
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
			case r.Status == RunActive && s == nil:
				rctx, rcancel := context.WithCancel(ctx)
				s = &served{cancel: rcancel, done: make(chan struct{})}
				serving[id] = s
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer close(s.done)
					serveRun(rctx, &cfg, r)
				}()
			case r.Status == RunFinished:
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
func serveRun(ctx context.Context, cfg *HostConfig, r *Record) {
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
	history History
	recent  []bool // last attempts, newest last: true = succeeded
	policy  *Policy
	offers  map[string]grantNote // offered to it, waiting for a free slot
	idle    int                  // free slots with no request out, after the last round
	dirty   bool                 // registry entry out of date
}

func (w *hostWorker) free(bids int) int { return w.spec.Slots - w.busy - bids }

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
	workers []*hostWorker
	byID    map[string]*hostWorker

	ready    map[string]readyNote // task -> announcement
	shardOf  map[string]int       // task -> shard, for ready and open tasks
	opens    map[string]bool
	tried    map[string]time.Time // open tasks: when this host last tried one
	grants   map[string]grantNote // grants to this host's workers, not yet started
	started  map[string]bool      // tasks this host is working on
	cooldown bool
	bids     map[string]*outBid // task -> this host's request
	feed     <-chan func()

	results chan workResult
	applies chan func()    // from background writes: changes to make on the loop
	writing bool           // a registry write is under way
	wg      sync.WaitGroup // work goroutines, gatekeepers, merge role
}

// workResult is a finished work goroutine's report.
type workResult struct {
	w    *hostWorker
	task string
	tags []string
	ran  bool // an attempt actually ran
	ok   bool
}

// bidTimeout is how long a claim request waits for a decision before the
// worker withdraws it and asks again.
const bidTimeout = 3 * time.Second

func serveOnce(ctx context.Context, cfg *HostConfig, r *Record) error {
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
	h := &hostState{env: env, cfg: cfg, sess: sess, byID: map[string]*hostWorker{}, ready: map[string]readyNote{},
		shardOf: map[string]int{}, opens: map[string]bool{}, tried: map[string]time.Time{}, grants: map[string]grantNote{}, started: map[string]bool{},
		bids: map[string]*outBid{}, results: make(chan workResult), applies: make(chan func())}
	for _, spec := range cfg.Workers {
		w := &hostWorker{spec: spec, policy: NewPolicy(cfg.Policy, cfg.Clock.Now), offers: map[string]grantNote{}, dirty: true}
		h.workers = append(h.workers, w)
		h.byID[spec.ID] = w
	}
	defer h.wg.Wait()
	defer cancel()
	if err := h.register(ctx); err != nil {
		return err
	}
	for s := range r.Options.Shards {
		h.spawn(func() {
			h.campaign(ctx, shardRole(r.Run, s), func(lctx context.Context, l *board.Leadership) error {
				return runGatekeeper(lctx, env, s, l)
			})
		})
	}
	if cfg.Merge != nil && r.Remote != "" {
		h.spawn(func() {
			h.campaign(ctx, mergeRole(r.Run), func(lctx context.Context, l *board.Leadership) error {
				return runMerge(lctx, env, cfg.Merge, l)
			})
		})
	}
	feed, err := follow(ctx, cfg.Store, feedPrefix(r.Run), h.onFeed)
	if err != nil {
		return err
	}
	h.feed = feed
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
			return fmt.Errorf("host lease lost: %w", ErrLost)
		case f, ok := <-feed:
			if !ok {
				return errWatchEnded(ctx)
			}
			f()
		case res := <-h.results:
			h.finished(res)
		case f := <-h.applies:
			f()
		case <-cfg.Clock.After(tick):
		}
	}
}

// drain applies whatever the feed has already delivered, so decisions are
// made on the freshest view.
func (h *hostState) drain() {
	for {
		select {
		case f, ok := <-h.feed:
			if !ok {
				return
			}
			f()
		default:
			return
		}
	}
}

// spawn runs f as a goroutine the host waits for.
func (h *hostState) spawn(f func()) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		f()
	}()
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

// onFeed applies one change of the run's feed.
func (h *hostState) onFeed(ev board.Event) {
	if ev.Key == cooldownKey(h.env.run.Run) {
		h.cooldown = ev.Type == board.EventPut
		return
	}
	rest := strings.TrimPrefix(ev.Key, feedPrefix(h.env.run.Run))
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return
	}
	shard := 0
	fmt.Sscanf(parts[0], "s%d", &shard)
	task := unesc(parts[2])
	put := ev.Type == board.EventPut
	switch parts[1] {
	case "ready":
		if put {
			var n readyNote
			if json.Unmarshal(ev.Value, &n) == nil {
				h.ready[task], h.shardOf[task] = n, shard
			}
			return
		}
		delete(h.ready, task)
		// Decided: if our request lost, the worker may ask again.
		if b := h.bids[task]; b != nil {
			delete(h.bids, task)
		}
	case "open":
		if put {
			h.opens[task], h.shardOf[task] = true, shard
		} else {
			delete(h.opens, task)
		}
	case "grant":
		if !put {
			delete(h.grants, task)
			for _, w := range h.workers {
				delete(w.offers, task)
			}
			return
		}
		var g grantNote
		if json.Unmarshal(ev.Value, &g) != nil || g.Host != h.env.host || h.byID[g.Worker] == nil {
			return
		}
		h.shardOf[task] = shard
		delete(h.bids, task)
		h.grants[task] = g
	}
}

// start runs one attempt of task for w in a goroutine.
func (h *hostState) start(ctx context.Context, w *hostWorker, task string, score float64, via string) {
	w.busy++
	w.dirty = true
	h.started[task] = true
	delete(w.offers, task)
	h.spawn(func() {
		res := h.work(ctx, w, task, score, via)
		select {
		case h.results <- res:
		case <-ctx.Done():
		}
	})
}

// finished takes a work goroutine's report.
func (h *hostState) finished(res workResult) {
	w := res.w
	w.busy--
	w.dirty = true
	delete(h.started, res.task)
	if res.ran {
		w.history.record(res.tags, res.ok)
		w.recent = append(w.recent, res.ok)
		if len(w.recent) > 10 {
			w.recent = w.recent[1:]
		}
	}
	// An offer that waited for this slot.
	for task, g := range w.offers {
		if !h.started[task] {
			h.grants[task] = g
		}
		break
	}
}

// unesc reverses esc; a malformed segment is returned as is.
func unesc(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}
