package swarm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// PublishConfig describes a plan to publish as a swarm run.
type PublishConfig struct {
	Store *board.Store
	// Repo is a working tree of the repository the plan is for. Without a
	// Remote it is checked like `apiary run` checks it (clean, with the
	// integration branch) and is itself the run's remote: workers clone it
	// and push candidate branches to it, and the merge role moves its
	// branch by update-ref. With a Remote (a shared git URL or path), the
	// integration branch is read from the remote.
	Repo     *git.Repo
	Remote   string
	PlanFile string
	PlanData []byte
	Agents   map[string]plan.Agent
	RunID    string // "" generates one
	Options  layout.Options
	Now      func() time.Time
	Rand     io.Reader
}

// Publish validates a plan and publishes it on the board as a swarm
// run: its tasks (ready ones announced), then the run's record, which
// workers are waiting for.
func Publish(ctx context.Context, cfg PublishConfig) (*layout.Record, error) {
	if cfg.Store == nil || cfg.Repo == nil {
		return nil, fmt.Errorf("%w: publishing needs a board and a repository", layout.ErrConfig)
	}
	now, rnd := cfg.Now, cfg.Rand
	if now == nil {
		now = time.Now
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	p, err := plan.ParseWith(cfg.PlanFile, cfg.PlanData, plan.Options{Agents: cfg.Agents})
	if err != nil {
		return nil, err
	}
	id := cfg.RunID
	if id == "" {
		if id, err = rundir.NewID(now(), rnd); err != nil {
			return nil, err
		}
	}
	if !rundir.ValidID(id) {
		return nil, fmt.Errorf("%w: run id %q", layout.ErrConfig, id)
	}
	r := &layout.Record{Run: id, PlanFile: cfg.PlanFile, Remote: cfg.Remote, Agents: p.Agents, Options: cfg.Options, Created: now().UTC()}
	if r.Options.IntentWaitS <= 0 && p.IntentWaitS > 0 {
		r.Options.IntentWaitS = p.IntentWaitS // the plan's, unless the caller set one
	}
	if r.Options.HedgeAfterS < 0 {
		return nil, fmt.Errorf("%w: a negative hedge delay (%gs)", layout.ErrConfig, r.Options.HedgeAfterS)
	}
	r.Options.Merge.FromPlan(p.Merge)
	if err := r.Options.Merge.Validate(); err != nil {
		return nil, err
	}
	if r.Remote == "" {
		branch, err := p.CheckRepo(ctx, cfg.Repo)
		if err != nil {
			return nil, err
		}
		top, err := cfg.Repo.TopLevel(ctx)
		if err != nil {
			return nil, err
		}
		if r.Remote, err = filepath.Abs(top); err != nil {
			return nil, err
		}
		r.IntegrationBranch = branch
		if r.StartHead, err = cfg.Repo.RevParse(ctx, "refs/heads/"+branch); err != nil {
			return nil, err
		}
	} else {
		r.IntegrationBranch = p.IntegrationBranch
		if r.IntegrationBranch == "" {
			if r.IntegrationBranch, err = cfg.Repo.CurrentBranch(ctx); err != nil {
				return nil, fmt.Errorf("%w: no integration_branch in the plan and %v", layout.ErrConfig, err)
			}
		}
		if r.StartHead, err = cfg.Repo.RemoteRef(ctx, r.Remote, "refs/heads/"+r.IntegrationBranch); err != nil {
			return nil, err
		}
		if r.StartHead == "" {
			return nil, fmt.Errorf("%w: the remote %s has no branch %s", layout.ErrConfig, r.Remote, r.IntegrationBranch)
		}
	}
	if r.TraceID, err = rundir.RandomHex(rnd, 16); err != nil {
		return nil, err
	}
	prio := p.BottomLevels()
	specs := make([]publishSpec, 0, len(p.Tasks))
	for _, pt := range p.Tasks {
		env := pt.Template()
		if env.TaskID, err = envelope.NewTaskID(now(), rnd); err != nil {
			return nil, err
		}
		n, k := 0, 0
		if q := pt.Quorum; q != nil {
			n, k = q.N, q.K
		}
		sp := layout.SpecFor(pt.HedgeAfterS, pt.HedgeAgent, n, k, pt.EstimateS, r.Options.HedgeAfterS)
		r.Options.Speculative = r.Options.Speculative || sp != nil
		specs = append(specs, publishSpec{name: pt.ID, env: env, tags: pt.Tags, deps: pt.Deps, prio: prio[pt.ID], spec: sp})
		r.Tasks = append(r.Tasks, pt.ID)
	}
	if err := publish(ctx, cfg.Store, r, specs); err != nil {
		return nil, err
	}
	return r, nil
}

// WaitRun follows run's tasks (including those the merge role adds) until
// every one has ended, calling onTask
// (if set) with each change, then marks the run finished and returns its
// report. When ctx ends first it returns the report so far and ctx's
// error; the run stays active.
func WaitRun(ctx context.Context, st *board.Store, run string, onTask func(board.Task)) (*Report, error) {
	r, err := layout.ReadRecord(ctx, st, run)
	if err != nil {
		return nil, err
	}
	state := map[string]board.TaskStatus{}
	ch, err := layout.Follow(ctx, st, layout.RunTaskPrefix(run), func(ev board.Event) {
		if ev.Type != board.EventPut {
			return
		}
		t, err := board.DecodeTask(board.KV{Key: ev.Key, Value: ev.Value, ModRevision: ev.Revision})
		if err != nil {
			return
		}
		if state[t.ID] != t.Status && onTask != nil {
			onTask(t)
		}
		state[t.ID] = t.Status
	})
	if err != nil {
		return nil, err
	}
	for {
		n := 0
		for _, name := range r.Tasks {
			if layout.Terminal(state[layout.TaskID(run, name)]) {
				n++
			}
		}
		if n == len(r.Tasks) {
			// The merge role may have added tasks (a split, a reuse) in the
			// meantime: the run is over only when the record's tasks are.
			cur, err := layout.ReadRecord(ctx, st, run)
			if err != nil {
				return nil, err
			}
			if len(cur.Tasks) == len(r.Tasks) {
				break
			}
			r = cur
			continue
		}
		select {
		case <-ctx.Done():
			rep, _ := LoadReport(context.WithoutCancel(ctx), st, run)
			return rep, ctx.Err()
		case f, ok := <-ch:
			if !ok {
				if ctx.Err() != nil {
					continue
				}
				return nil, errors.New("swarm: the task watch ended")
			}
			f()
		}
	}
	if err := finishRun(ctx, st, run); err != nil {
		return nil, err
	}
	return LoadReport(ctx, st, run)
}

// publishSpec is one task to publish.
type publishSpec struct {
	name  string
	env   *envelope.Envelope
	tags  []string
	deps  []envelope.Dep
	prio  float64
	workS float64
	spec  *layout.Speculation
}

// publish writes run and its tasks: tasks without dependencies are ready
// and announced, the others pending. The run record goes last, so a worker
// that sees the run finds every task.
func publish(ctx context.Context, st *board.Store, r *Record, specs []publishSpec) error {
	if err := publishTasks(ctx, st, r, specs); err != nil {
		return err
	}
	return publishRun(ctx, st, r)
}

// publishTasks writes the run's tasks.
func publishTasks(ctx context.Context, st *board.Store, r *Record, specs []publishSpec) error {
	r.Options.Defaults()
	succ := map[string][]string{}
	for _, sp := range specs {
		for _, d := range sp.deps {
			succ[d.Task] = append(succ[d.Task], sp.name)
		}
	}
	var ops []board.Op
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		_, err := st.Txn(ctx, board.Txn{Then: ops})
		ops = ops[:0]
		return err
	}
	for _, sp := range specs {
		p := &layout.Payload{Name: sp.name, Envelope: sp.env, Succ: succ[sp.name],
			Shard: layout.ShardOf(sp.name, r.Options.Shards), Prio: sp.prio, WorkS: sp.workS, Spec: sp.spec}
		deps := make([]string, len(sp.deps))
		for i, d := range sp.deps {
			deps[i] = layout.TaskID(r.Run, d.Task)
		}
		t := board.Task{ID: layout.TaskID(r.Run, sp.name), Status: board.TaskPending, Tags: sp.tags, Deps: deps}
		if len(sp.deps) == 0 {
			t.Status = board.TaskReady
		}
		val, err := layout.EncodeTask(t, p)
		if err != nil {
			return err
		}
		ops = append(ops, board.PutOp(board.TaskKey(t.ID), val, board.NoLease))
		if t.Status == board.TaskReady {
			ops = append(ops, board.PutOp(layout.ReadyKey(r.Run, p.Shard, t.ID), layout.MustJSON(layout.NoteOf(t, p, val, 0)), board.NoLease))
		}
		if len(ops) >= 96 { // etcd bounds the operations of one transaction
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// publishRun writes the run's record, active; it fails if the run exists.
func publishRun(ctx context.Context, st *board.Store, r *Record) error {
	r.Status = RunActive
	rev, err := st.CAS(ctx, layout.RunKey(r.Run), layout.MustJSON(r), 0, board.NoLease)
	if errors.Is(err, board.ErrRevisionMismatch) {
		return fmt.Errorf("%w: run %s is already on the board", ErrConfig, r.Run)
	}
	r.Revision = rev
	return err
}

// finishRun marks the run finished: hosts stop serving it.
func finishRun(ctx context.Context, st *board.Store, run string) error {
	for {
		r, err := ReadRecord(ctx, st, run)
		if err != nil {
			return err
		}
		if r.Status == RunFinished {
			return nil
		}
		r.Status, r.Finished = RunFinished, time.Now().UTC()
		_, err = st.CAS(ctx, layout.RunKey(run), layout.MustJSON(r), r.Revision, board.NoLease)
		if !errors.Is(err, board.ErrRevisionMismatch) {
			return err
		}
	}
}
