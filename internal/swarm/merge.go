package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
)

// The merge role is the single integrator of a swarm run: whichever host
// leads the run's merge election (board.Campaign on swarm/RUN/merge). It
// follows the candidates workers record, integrates them in batches —
// after N finished tasks or L changed lines per worker, or when a
// candidate has waited long enough — onto the integration branch of the
// shared remote, runs the tasks' checks once on the batch's tree, and moves
// the branch only by compare-and-swap (a push with a lease, or update-ref
// when the remote is the local repository). Each integrated task is then
// marked done on the board under the merge role's election key and the
// task's fencing token; a crash in between is repaired from the branch's
// trailers, so no task is integrated twice.
//
// Along the way it reports exact and near duplicate functions across
// workers (optionally rejecting them), publishes an index of the
// repository's utility functions, counts writes per file and suggests a
// split task for hot files, records integration conflicts (the first of a
// type enters the hints review queue), compacts the intent log, and cools
// the run down when duplicates or gate failures pile up.

// MergeOptions tune the merge role; zero fields take the defaults.
type MergeOptions struct {
	BatchTasks int     `json:"batch_tasks"`  // integrate a worker's work after N finished tasks (default 1)
	BatchLines int     `json:"batch_lines"`  // ... or L changed lines (default 0: no line trigger)
	BatchWaitS float64 `json:"batch_wait_s"` // a candidate waits at most this long for its batch (default 2)
	// NearDup is the similarity ratio at which a function counts as a near
	// duplicate (default 0.85).
	NearDup float64 `json:"near_dup"`
	// OnExact and OnNear say what happens to a candidate that adds an
	// exact or a near duplicate of a function: DupWarn (the default)
	// integrates it and reports the duplicate; DupReject rejects the
	// attempt with a receipt naming the function to use, and the task is
	// retried with that as a hint; DupReuse integrates it and adds a task
	// that makes the new function call the existing one.
	// RejectDuplicates is the older spelling of OnExact: DupReject.
	OnExact          DupPolicy `json:"on_exact,omitempty"`
	OnNear           DupPolicy `json:"on_near,omitempty"`
	RejectDuplicates bool      `json:"reject_duplicates,omitempty"`
	// Cool-down: over the last CooldownWindow integrations (default 20, and
	// at least CooldownMin = 8 of them), a duplicate rate above MaxDupRate
	// (0.25) or a gate pass rate below MinPassRate (0.75) stops new claims
	// until the work in flight has drained.
	CooldownWindow int     `json:"cooldown_window"`
	CooldownMin    int     `json:"cooldown_min"`
	MaxDupRate     float64 `json:"max_dup_rate"`
	MinPassRate    float64 `json:"min_pass_rate"`
	// HotTouches is the number of tasks writing one file that makes it hot
	// (default 3): a task that splits the file is then added and runs
	// before the tasks not yet started that write it, unless NoSplit.
	// CompactShare is the intent-log size, as a share of the run's tasks,
	// that triggers compaction (default 0.5).
	HotTouches   int     `json:"hot_touches"`
	NoSplit      bool    `json:"no_split,omitempty"`
	CompactShare float64 `json:"compact_share"`
}

// DupPolicy is what the merge role does with a duplicate function.
type DupPolicy string

// Duplicate policies.
const (
	DupWarn   DupPolicy = "warn"
	DupReject DupPolicy = "reject"
	DupReuse  DupPolicy = "reuse"
)

// Validate reports whether the options are usable: known policies and
// ratios in range.
func (o *MergeOptions) Validate() error {
	for _, p := range []DupPolicy{o.OnExact, o.OnNear} {
		switch p {
		case "", DupWarn, DupReject, DupReuse:
		default:
			return fmt.Errorf("%w: duplicate policy %q: want warn, reject or reuse", ErrConfig, p)
		}
	}
	if o.NearDup < 0 || o.NearDup > 1 {
		return fmt.Errorf("%w: near-duplicate ratio %g: want one in (0, 1]", ErrConfig, o.NearDup)
	}
	if o.HotTouches < 0 {
		return fmt.Errorf("%w: hot-file touches %d", ErrConfig, o.HotTouches)
	}
	return nil
}

// fromPlan fills the options the caller left unset from a plan's merge:
// section (what the caller sets — flags, apiary.yaml — wins).
func (o *MergeOptions) fromPlan(m *plan.Merge) {
	if m == nil {
		return
	}
	if o.OnExact == "" && !o.RejectDuplicates {
		o.OnExact = DupPolicy(m.OnExact)
	}
	if o.OnNear == "" {
		o.OnNear = DupPolicy(m.OnNear)
	}
	if o.NearDup == 0 {
		o.NearDup = m.NearDup
	}
	if o.HotTouches == 0 {
		o.HotTouches = m.HotTouches
	}
	o.NoSplit = o.NoSplit || m.NoSplit
}

// policy is what to do with a duplicate of kind (DupExact or DupNear).
func (o *MergeOptions) policy(kind string) DupPolicy {
	p := o.OnNear
	if kind == DupExact {
		p = o.OnExact
	}
	if p == "" {
		p = DupWarn
	}
	return p
}

func (o *MergeOptions) defaults() {
	if o.RejectDuplicates && o.OnExact == "" {
		o.OnExact = DupReject
	}
	if o.BatchTasks <= 0 {
		o.BatchTasks = 1
	}
	if o.BatchWaitS <= 0 {
		o.BatchWaitS = 2
	}
	if o.NearDup <= 0 {
		o.NearDup = 0.85
	}
	if o.CooldownWindow <= 0 {
		o.CooldownWindow = 20
	}
	if o.CooldownMin <= 0 {
		o.CooldownMin = 8
	}
	if o.MaxDupRate <= 0 {
		o.MaxDupRate = 0.25
	}
	if o.MinPassRate <= 0 {
		o.MinPassRate = 0.75
	}
	if o.HotTouches <= 0 {
		o.HotTouches = 3
	}
	if o.CompactShare <= 0 {
		o.CompactShare = 0.5
	}
}

// MergeConfig is where a host that may take the merge role keeps its work.
type MergeConfig struct {
	// Dir holds the merge role's clone of the remote, scratch worktrees and
	// receipts (DIR/RUN/...).
	Dir string
	Git git.Options
}

// Merge-role records on the board.
func utilsKey(run string) string     { return mergePrefix(run) + "utils" }
func statsKey(run string) string     { return mergePrefix(run) + "stats" }
func hotKey(run, file string) string { return mergePrefix(run) + "hot/" + esc(file) }
func dupKey(run, task, fn string) string {
	return mergePrefix(run) + "dups/" + esc(task) + "/" + esc(fn)
}
func intentLogKey(run, task string) string { return intentLogPrefix(run) + esc(task) }

// MergeStats is the merge role's running account, published at
// swarm/RUN/merge/stats.
type MergeStats struct {
	Integrated  int       `json:"integrated"`
	Batches     int       `json:"batches"`
	Rejected    int       `json:"rejected"`     // gate (checks) failures
	Conflicts   int       `json:"conflicts"`    // overlapping or textual
	Duplicates  int       `json:"duplicates"`   // candidates with a duplicate function
	DupRejected int       `json:"dup_rejected"` // of which rejected
	Stale       int       `json:"stale"`        // candidates refused for an old fencing token
	CASRetries  int       `json:"cas_retries"`  // the branch moved under a batch
	Cooldowns   int       `json:"cooldowns"`    // times new claims were stopped
	Compactions int       `json:"compactions"`  // intent-log compactions
	Leader      string    `json:"leader"`
	Updated     time.Time `json:"updated"`
}

// outcome is one integration attempt, for the cool-down window.
type outcome struct{ dup, passed bool }

// merger is the merge role's state while it leads.
type merger struct {
	env   *runEnv
	cfg   *MergeConfig
	lead  *board.Leadership
	opts  MergeOptions
	repo  *mergeRepo
	stats MergeStats

	pending    map[string]*Candidate // task -> candidate
	integrated map[string]int64      // task -> token, from the branch's trailers
	index      *dupIndex
	touches    map[string][]string // file -> tasks that wrote it
	fileConfl  map[string]int
	hotDone    map[string]int  // file -> its touches when last published
	split      map[string]bool // files whose split task was added
	dupFuncs   map[string]bool // file\x00name of functions found to be duplicates
	window     []outcome
	cooling    bool
	logged     int // intent-log records
}

// runMerge serves as the run's merge role until the leadership or ctx ends.
func runMerge(ctx context.Context, env *runEnv, cfg *MergeConfig, lead *board.Leadership) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(lead.Context(), cancel)()
	repo, err := openMergeRepo(ctx, env.run, cfg)
	if err != nil {
		return err
	}
	m := &merger{env: env, cfg: cfg, lead: lead, opts: env.run.Options.Merge, repo: repo,
		pending: map[string]*Candidate{}, integrated: map[string]int64{}, index: newDupIndex(),
		touches: map[string][]string{}, fileConfl: map[string]int{}, hotDone: map[string]int{}, split: map[string]bool{}, dupFuncs: map[string]bool{}}
	m.opts.defaults()
	m.stats.Leader = env.host
	if kv, err := env.st.Get(ctx, statsKey(env.run.Run)); err == nil {
		_ = json.Unmarshal(kv.Value, &m.stats)
		m.stats.Leader = env.host
	}
	head, err := repo.head(ctx)
	if err != nil {
		return err
	}
	if err := m.scanIntegrated(ctx, head); err != nil {
		return err
	}
	if err := m.buildIndex(ctx, head); err != nil {
		env.log.Warn("utility index", "err", err)
	}
	if kv, err := env.st.Get(ctx, cooldownKey(env.run.Run)); err == nil && kv.Value != nil {
		m.cooling = true
	}
	if kvs, _, err := env.st.List(ctx, intentLogPrefix(env.run.Run)); err == nil {
		m.logged = len(kvs)
	}
	cands, err := follow(ctx, env.st, candPrefix(env.run.Run), func(ev board.Event) {
		task := lastSeg(ev.Key)
		if ev.Type == board.EventDelete {
			delete(m.pending, task)
			return
		}
		if c, err := decodeCandidate(board.KV{Key: ev.Key, Value: ev.Value, ModRevision: ev.Revision}); err == nil {
			m.pending[task] = c
		}
	})
	if err != nil {
		return err
	}
	env.log.Info("merge role", "leader", env.host, "head", head)
	for {
		if err := m.step(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			env.log.Warn("merge step", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case f, ok := <-cands:
			if !ok {
				return errWatchEnded(ctx)
			}
			f()
		case <-env.clock.After(250 * time.Millisecond):
		}
	}
}

// step integrates every batch that is due and maintains the cool-down.
func (m *merger) step(ctx context.Context) error {
	now := m.env.clock.Now()
	byWorker := map[string][]*Candidate{}
	for _, c := range m.pending {
		byWorker[c.Worker] = append(byWorker[c.Worker], c)
	}
	workers := make([]string, 0, len(byWorker))
	for w := range byWorker {
		workers = append(workers, w)
	}
	sort.Strings(workers)
	for _, w := range workers {
		cs := byWorker[w]
		sort.Slice(cs, func(i, j int) bool { return cs[i].Token < cs[j].Token })
		lines := 0
		for _, c := range cs {
			lines += c.Lines()
		}
		oldest := cs[0].Time
		due := len(cs) >= m.opts.BatchTasks || m.opts.BatchLines > 0 && lines >= m.opts.BatchLines ||
			now.Sub(oldest) >= secs(m.opts.BatchWaitS)
		if !due {
			continue
		}
		if err := m.integrateBatch(ctx, cs, 0); err != nil {
			return err
		}
	}
	return m.coolDown(ctx)
}

// coolDown starts a cool-down when the window's duplicate or pass rate is
// bad, and ends it once nothing is in flight.
func (m *merger) coolDown(ctx context.Context) error {
	run := m.env.run.Run
	if !m.cooling {
		cool, dupRate, passRate := coolDownDue(m.window, m.opts)
		if !cool {
			return nil
		}
		rec := map[string]any{"dup_rate": dupRate, "pass_rate": passRate, "since": m.env.clock.Now().UTC()}
		if _, err := m.env.st.Txn(ctx, board.Txn{If: []board.Cmp{m.lead.Guard()},
			Then: []board.Op{board.PutOp(cooldownKey(run), mustJSON(rec), board.NoLease)}}); err != nil {
			return err
		}
		m.cooling = true
		m.stats.Cooldowns++
		m.env.log.Warn("cool-down: no new claims until the work in flight drains", "dup_rate", dupRate, "pass_rate", passRate)
		return m.publishStats(ctx)
	}
	kvs, _, err := m.env.st.List(ctx, runClaimPrefix(run))
	if err != nil || len(kvs) > 0 || len(m.pending) > 0 {
		return err
	}
	if _, err := m.env.st.Txn(ctx, board.Txn{If: []board.Cmp{m.lead.Guard()}, Then: []board.Op{board.DeleteOp(cooldownKey(run))}}); err != nil {
		return err
	}
	m.cooling, m.window = false, nil
	m.env.log.Info("cool-down over")
	return nil
}

// coolDownDue reports whether window (at least CooldownMin outcomes) has a
// duplicate rate above MaxDupRate or a gate pass rate below MinPassRate,
// with both rates.
func coolDownDue(window []outcome, opts MergeOptions) (cool bool, dupRate, passRate float64) {
	n := len(window)
	if n == 0 || n < opts.CooldownMin {
		return false, 0, 1
	}
	dups, passed := 0, 0
	for _, o := range window {
		if o.dup {
			dups++
		}
		if o.passed {
			passed++
		}
	}
	dupRate, passRate = float64(dups)/float64(n), float64(passed)/float64(n)
	return dupRate > opts.MaxDupRate || passRate < opts.MinPassRate, dupRate, passRate
}

// record adds an integration attempt to the cool-down window.
func (m *merger) record(o outcome) {
	m.window = append(m.window, o)
	if len(m.window) > m.opts.CooldownWindow {
		m.window = m.window[len(m.window)-m.opts.CooldownWindow:]
	}
}

func (m *merger) publishStats(ctx context.Context) error {
	m.stats.Updated = m.env.clock.Now().UTC()
	_, err := m.env.st.Txn(ctx, board.Txn{If: []board.Cmp{m.lead.Guard()},
		Then: []board.Op{board.PutOp(statsKey(m.env.run.Run), mustJSON(m.stats), board.NoLease)}})
	return err
}

// guards are the conditions of every task transition the merge role makes
// for candidate c.
func (m *merger) guards(c *Candidate) []board.Cmp {
	return []board.Cmp{m.lead.Guard(), board.FenceIs(c.Task, c.Token)}
}

// dropCandidate deletes c's record (it was stale or is settled elsewhere).
func (m *merger) dropCandidate(ctx context.Context, c *Candidate) {
	_, err := m.env.st.Txn(ctx, board.Txn{If: []board.Cmp{m.lead.Guard(), board.ModifiedAt(candKey(m.env.run.Run, c.Task), c.Revision)},
		Then: []board.Op{board.DeleteOp(candKey(m.env.run.Run, c.Task))}})
	if err == nil {
		delete(m.pending, c.Task)
		m.repo.dropBranches(ctx, []*Candidate{c})
	}
}

// check returns the task of c if c is still the task's current attempt:
// the task is running under c's fencing token. Otherwise it drops c.
func (m *merger) check(ctx context.Context, c *Candidate) (board.Task, *swarmTask, bool) {
	t, err := m.env.st.Task(ctx, c.Task)
	if err != nil {
		return t, nil, false
	}
	p, err := decodePayload(t)
	if err != nil {
		return t, nil, false
	}
	if err := m.env.st.CheckFence(ctx, c.Task, c.Token); err != nil || t.Status != board.TaskRunning || t.Token != c.Token {
		if tok, ok := m.integrated[c.Task]; ok && tok == c.Token && t.Status == board.TaskRunning {
			return t, p, true // integrated before a crash; settled below
		}
		m.stats.Stale++
		m.env.log.Info("stale candidate refused", "task", c.Task, "token", c.Token, "err", err)
		m.dropCandidate(ctx, c)
		return t, nil, false
	}
	return t, p, true
}

// errorf wraps merge-role errors.
func errorf(format string, args ...any) error {
	return fmt.Errorf("swarm: merge role: "+format, args...)
}
