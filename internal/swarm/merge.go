package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
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

// MergeConfig is where a host that may take the merge role keeps its work.
type MergeConfig struct {
	// Dir holds the merge role's clone of the remote, scratch worktrees and
	// receipts (DIR/RUN/...).
	Dir string
	Git git.Options
	// Policy overrides the run's duplicate and hot-file policy while this
	// host holds the role (the worker's flags or apiary.yaml): its set
	// fields — OnExact, OnNear, NearDup, HotTouches, NoSplit — win over
	// the run record's.
	Policy layout.MergeOptions
}

// Merge-role records on the board.
func utilsKey(run string) string     { return layout.MergePrefix(run) + "utils" }
func statsKey(run string) string     { return layout.MergePrefix(run) + "stats" }
func hotKey(run, file string) string { return layout.MergePrefix(run) + "hot/" + layout.Esc(file) }
func dupKey(run, task, fn string) string {
	return layout.MergePrefix(run) + "dups/" + layout.Esc(task) + "/" + layout.Esc(fn)
}
func intentLogKey(run, task string) string { return layout.IntentLogPrefix(run) + layout.Esc(task) }

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
	opts  layout.MergeOptions
	repo  *mergeRepo
	stats MergeStats

	pending    map[string]*layout.Candidate // task -> candidate
	integrated map[string]int64             // task -> token, from the branch's trailers
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
	opts := cfg.Policy.Over(env.run.Options.Merge)
	if err := opts.Validate(); err != nil {
		return err
	}
	m := &merger{env: env, cfg: cfg, lead: lead, opts: opts, repo: repo,
		pending: map[string]*layout.Candidate{}, integrated: map[string]int64{}, index: newDupIndex(),
		touches: map[string][]string{}, fileConfl: map[string]int{}, hotDone: map[string]int{}, split: map[string]bool{}, dupFuncs: map[string]bool{}}
	m.opts.Defaults()
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
	if kv, err := env.st.Get(ctx, layout.CooldownKey(env.run.Run)); err == nil && kv.Value != nil {
		m.cooling = true
	}
	if kvs, _, err := env.st.List(ctx, layout.IntentLogPrefix(env.run.Run)); err == nil {
		m.logged = len(kvs)
	}
	cands, err := layout.Follow(ctx, env.st, layout.CandPrefix(env.run.Run), func(ev board.Event) {
		task := layout.LastSeg(ev.Key)
		if ev.Type == board.EventDelete {
			delete(m.pending, task)
			return
		}
		if c, err := layout.DecodeCandidate(board.KV{Key: ev.Key, Value: ev.Value, ModRevision: ev.Revision}); err == nil {
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
				return layout.ErrWatchEnded(ctx)
			}
			f()
		case <-env.clock.After(250 * time.Millisecond):
		}
	}
}

// step integrates every batch that is due and maintains the cool-down.
func (m *merger) step(ctx context.Context) error {
	now := m.env.clock.Now()
	byWorker := map[string][]*layout.Candidate{}
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
			now.Sub(oldest) >= layout.Secs(m.opts.BatchWaitS)
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
			Then: []board.Op{board.PutOp(layout.CooldownKey(run), layout.MustJSON(rec), board.NoLease)}}); err != nil {
			return err
		}
		m.cooling = true
		m.stats.Cooldowns++
		m.env.log.Warn("cool-down: no new claims until the work in flight drains", "dup_rate", dupRate, "pass_rate", passRate)
		return m.publishStats(ctx)
	}
	kvs, _, err := m.env.st.List(ctx, layout.RunClaimPrefix(run))
	if err != nil || len(kvs) > 0 || len(m.pending) > 0 {
		return err
	}
	if _, err := m.env.st.Txn(ctx, board.Txn{If: []board.Cmp{m.lead.Guard()}, Then: []board.Op{board.DeleteOp(layout.CooldownKey(run))}}); err != nil {
		return err
	}
	m.cooling, m.window = false, nil
	m.env.log.Info("cool-down over")
	return nil
}

// coolDownDue reports whether window (at least CooldownMin outcomes) has a
// duplicate rate above MaxDupRate or a gate pass rate below MinPassRate,
// with both rates.
func coolDownDue(window []outcome, opts layout.MergeOptions) (cool bool, dupRate, passRate float64) {
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
		Then: []board.Op{board.PutOp(statsKey(m.env.run.Run), layout.MustJSON(m.stats), board.NoLease)}})
	return err
}

// guards are the conditions of every task transition the merge role makes
// for candidate c.
func (m *merger) guards(c *layout.Candidate) []board.Cmp {
	return []board.Cmp{m.lead.Guard(), board.FenceIs(c.Task, c.Token)}
}

// dropCandidate deletes c's record (it was stale or is settled elsewhere).
func (m *merger) dropCandidate(ctx context.Context, c *layout.Candidate) {
	_, err := m.env.st.Txn(ctx, board.Txn{If: []board.Cmp{m.lead.Guard(), board.ModifiedAt(layout.CandKey(m.env.run.Run, c.Task), c.Revision)},
		Then: []board.Op{board.DeleteOp(layout.CandKey(m.env.run.Run, c.Task))}})
	if err == nil {
		delete(m.pending, c.Task)
		m.repo.dropBranches(ctx, []*layout.Candidate{c})
	}
}

// check returns the task of c if c is still the task's current attempt:
// the task is running under c's fencing token. Otherwise it drops c.
func (m *merger) check(ctx context.Context, c *layout.Candidate) (board.Task, *layout.Payload, bool) {
	t, err := m.env.st.Task(ctx, c.Task)
	if err != nil {
		return t, nil, false
	}
	p, err := layout.DecodePayload(t)
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
