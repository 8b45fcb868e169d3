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
	Options  Options
	Now      func() time.Time
	Rand     io.Reader
}

// Publish validates a plan and publishes it on the board as a swarm
// run: its tasks (ready ones announced), then the run's record, which
// workers are waiting for.
func Publish(ctx context.Context, cfg PublishConfig) (*Record, error) {
	if cfg.Store == nil || cfg.Repo == nil {
		return nil, fmt.Errorf("%w: publishing needs a board and a repository", ErrConfig)
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
		return nil, fmt.Errorf("%w: run id %q", ErrConfig, id)
	}
	r := &Record{Run: id, PlanFile: cfg.PlanFile, Remote: cfg.Remote, Agents: p.Agents, Options: cfg.Options, Created: now().UTC()}
	r.Options.Merge.fromPlan(p.Merge)
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
				return nil, fmt.Errorf("%w: no integration_branch in the plan and %v", ErrConfig, err)
			}
		}
		if r.StartHead, err = cfg.Repo.RemoteRef(ctx, r.Remote, "refs/heads/"+r.IntegrationBranch); err != nil {
			return nil, err
		}
		if r.StartHead == "" {
			return nil, fmt.Errorf("%w: the remote %s has no branch %s", ErrConfig, r.Remote, r.IntegrationBranch)
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
		specs = append(specs, publishSpec{name: pt.ID, env: env, tags: pt.Tags, deps: pt.Deps, prio: prio[pt.ID]})
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
	r, err := ReadRecord(ctx, st, run)
	if err != nil {
		return nil, err
	}
	state := map[string]board.TaskStatus{}
	ch, err := follow(ctx, st, runTaskPrefix(run), func(ev board.Event) {
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
			if terminal(state[taskID(run, name)]) {
				n++
			}
		}
		if n == len(r.Tasks) {
			// The merge role may have added tasks (a split, a reuse) in the
			// meantime: the run is over only when the record's tasks are.
			cur, err := ReadRecord(ctx, st, run)
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
