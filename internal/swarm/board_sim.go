package swarm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// SimTask is one task of a simulated run: no envelope, WorkS seconds of
// work for a SimExecutor, and data dependencies on earlier tasks by name.
type SimTask struct {
	Name  string
	Prio  float64
	WorkS float64
	Deps  []string
}

// SimRun is a run of simulated tasks on a board, the workload of the
// scale benchmark (internal/bench), which drains it with RunHost
// (self-organizing) or with CentralHost and Scheduler (one central
// scheduler, the baseline). It is published in two steps so that a
// benchmark can start its clock in between: PublishSim writes the tasks,
// Start the record hosts wait for. A SimRun reads and writes the board
// through the client it was published with; its methods are for one
// goroutine, but CentralHost and Scheduler, which use clients of their
// own.
type SimRun struct {
	st *board.Store
	r  *layout.Record
}

// SimTally is what became of a simulated run's tasks: how many were never
// worked, how many were worked more than once, and how many the board
// records as done.
type SimTally struct {
	Missing, Duplicated, Done int
}

// PublishSim writes the tasks of simulated run id with opts on st — those
// without dependencies ready and announced — but not the run's record.
func PublishSim(ctx context.Context, st *board.Store, id string, opts layout.Options, tasks []SimTask) (*SimRun, error) {
	r := &layout.Record{Run: id, Created: time.Now().UTC(), Options: opts}
	specs := make([]publishSpec, len(tasks))
	for i, t := range tasks {
		sp := publishSpec{name: t.Name, prio: t.Prio, workS: t.WorkS}
		for _, d := range t.Deps {
			sp.deps = append(sp.deps, depOn(d))
		}
		specs[i] = sp
		r.Tasks = append(r.Tasks, t.Name)
	}
	if err := publishTasks(ctx, st, r, specs); err != nil {
		return nil, err
	}
	return &SimRun{st: st, r: r}, nil
}

// Start writes the run's record, active: hosts waiting for the run begin.
func (s *SimRun) Start(ctx context.Context) error { return publishRun(ctx, s.st, s.r) }

// CentralHost runs cfg.Workers of host cfg.Host on cfg.Store, taking the
// central scheduler's assignments with cfg.Exec, until ctx ends. Of cfg it
// reads only those fields, Prefetch and Logger.
func (s *SimRun) CentralHost(ctx context.Context, cfg HostConfig) error {
	return runCentralHost(ctx, s.env(cfg.Store, cfg.Host, cfg.Logger), cfg.Workers, cfg.Exec, cfg.Prefetch)
}

// Scheduler assigns the run's ready tasks to the central hosts that ask,
// through st, until ctx ends.
func (s *SimRun) Scheduler(ctx context.Context, st *board.Store, log *slog.Logger) error {
	return runCentralScheduler(ctx, s.env(st, "scheduler", log))
}

func (s *SimRun) env(st *board.Store, host string, log *slog.Logger) *runEnv {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &runEnv{st: st, run: s.r, clock: board.SystemClock(), log: log, host: host}
}

// Wait blocks until every task of the run has ended, or until an error
// arrives on errs (a host's) or ctx ends.
func (s *SimRun) Wait(ctx context.Context, errs <-chan error) error {
	run, n := s.r.Run, len(s.r.Tasks)
	done := map[string]bool{}
	ch, err := layout.Follow(ctx, s.st, layout.RunTaskPrefix(run), func(ev board.Event) {
		if ev.Type != board.EventPut {
			return
		}
		if t, err := board.DecodeTask(board.KV{Key: ev.Key, Value: ev.Value, ModRevision: ev.Revision}); err == nil && layout.Terminal(t.Status) {
			done[t.ID] = true
		}
	})
	if err != nil {
		return err
	}
	for len(done) < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("swarm bench: %d of %d tasks done: %w", len(done), n, ctx.Err())
		case err := <-errs:
			return err
		case f, ok := <-ch:
			if !ok {
				return errors.New("swarm bench: task watch ended")
			}
			f()
		}
	}
	return nil
}

// Finish marks the run finished: hosts stop serving it.
func (s *SimRun) Finish(ctx context.Context) error { return finishRun(ctx, s.st, s.r.Run) }

// Tally compares what x executed with what the board records.
func (s *SimRun) Tally(ctx context.Context, x *SimExecutor) (SimTally, error) {
	var t SimTally
	runs := x.Executions()
	for _, name := range s.r.Tasks {
		switch n := runs[layout.TaskID(s.r.Run, name)]; {
		case n == 0:
			t.Missing++
		case n > 1:
			t.Duplicated++
		}
	}
	tasks, err := layout.RunTasks(ctx, s.st, s.r.Run)
	if err != nil {
		return SimTally{}, err
	}
	for _, bt := range tasks {
		if bt.Status == board.TaskDone {
			t.Done++
		}
	}
	return t, nil
}

// Purge deletes every key of the finished run and compacts the board's
// history up to now, so that the next run starts on a board as empty as
// this one did.
func (s *SimRun) Purge(ctx context.Context) error {
	run := s.r.Run
	for _, prefix := range []string{layout.RunPrefix(run), layout.RunTaskPrefix(run), layout.RunClaimPrefix(run),
		board.PrefixFences + layout.Esc(run+"/"), layout.RunKey(run)} {
		kvs, _, err := s.st.List(ctx, prefix)
		if err != nil {
			return err
		}
		ops := make([]board.Op, 0, len(kvs))
		for _, kv := range kvs {
			ops = append(ops, board.DeleteOp(kv.Key))
		}
		if err := writeBatches(ctx, s.st, ops); err != nil {
			return err
		}
	}
	rev, err := s.st.Revision(ctx)
	if err != nil {
		return err
	}
	return s.st.Compact(ctx, rev)
}

// depOn is a data dependency on task name.
func depOn(name string) envelope.Dep { return envelope.Dep{Task: name, Kind: envelope.DepData} }
