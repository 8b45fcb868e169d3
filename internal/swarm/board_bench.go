package swarm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// Scale benchmark modes.
const (
	BenchCentral = "central" // one scheduler assigns every task; workers heartbeat
	BenchSelf    = "self"    // workers claim through shard gatekeepers
)

// BenchClient is one board client of the benchmark (a process): its store
// and the count of its board traffic so far.
type BenchClient struct {
	Store  *board.Store
	Counts func() board.MeterCounts
}

// BenchConfig describes one run of the swarm scale benchmark: Workers
// in-process workers drain Tasks simulated tasks from one board.
type BenchConfig struct {
	Mode    string
	Workers int
	Tasks   int
	// Work is the mean simulated work per task; each task's is uniform in
	// [Work/2, 3·Work/2).
	Work time.Duration
	// DepRate is the share of tasks that depend on an earlier one (default
	// 0.1).
	DepRate float64
	// HostSize is the number of workers sharing one board client — one
	// process (default 64).
	HostSize int
	// Shards of the self-organizing mode (default 8); Heartbeat the
	// central mode's worker heartbeat (default 1s).
	Shards    int
	Heartbeat time.Duration
	Seed      uint64
	// Open connects a new client to the board (the same board every
	// time): one for the benchmark's own monitoring, not counted, and one
	// per host. With Shared, it is called just twice — the monitor's and
	// one client every host (and the central scheduler) shares, as the
	// in-process workers of one process do; the local board, which
	// serializes writers on a file lock, is measured that way.
	Open   func(ctx context.Context) (BenchClient, error)
	Shared bool
	// Timeout bounds the drain (default 10m).
	Timeout time.Duration
	Logger  *slog.Logger
}

// BenchResult is one benchmark run's outcome.
type BenchResult struct {
	Mode            string            `json:"mode"`
	Workers         int               `json:"workers"`
	Tasks           int               `json:"tasks"`
	Hosts           int               `json:"hosts"`
	DrainS          float64           `json:"drain_s"`
	ClaimsPerS      float64           `json:"claims_per_s"`
	MessagesPerTask float64           `json:"messages_per_task"`
	WritesPerTask   float64           `json:"writes_per_task"`
	ExactlyOnce     bool              `json:"exactly_once"`
	Missing         int               `json:"missing"`    // tasks never completed
	Duplicated      int               `json:"duplicated"` // tasks completed more than once
	Counts          board.MeterCounts `json:"counts"`
}

func (c *BenchConfig) defaults() error {
	if c.Mode != BenchCentral && c.Mode != BenchSelf {
		return fmt.Errorf("%w: bench mode %q", ErrConfig, c.Mode)
	}
	if c.Workers <= 0 || c.Tasks <= 0 || c.Open == nil {
		return fmt.Errorf("%w: bench needs workers, tasks and a board", ErrConfig)
	}
	if c.Work <= 0 {
		c.Work = 50 * time.Millisecond
	}
	if c.DepRate == 0 {
		c.DepRate = 0.1
	}
	if c.HostSize <= 0 {
		c.HostSize = 64
	}
	if c.Shards <= 0 {
		c.Shards = 8
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// simSpecs makes n tasks with simulated work and a few dependencies on
// earlier tasks.
func simSpecs(n int, work time.Duration, depRate float64, seed uint64) []publishSpec {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	specs := make([]publishSpec, n)
	for i := range specs {
		sp := publishSpec{name: "t" + strconv.Itoa(i), prio: float64(n - i),
			workS: (work.Seconds() / 2) + rng.Float64()*work.Seconds()}
		if i > 0 && rng.Float64() < depRate {
			d := i - 1 - rng.IntN(min(i, 200))
			sp.deps = append(sp.deps, depOn("t"+strconv.Itoa(d)))
		}
		specs[i] = sp
	}
	return specs
}

// Bench publishes cfg.Tasks simulated tasks, lets cfg.Workers
// in-process workers drain them in cfg.Mode, and reports the time to
// drain, claims per second, board messages per task and whether every task
// was worked exactly once.
func Bench(ctx context.Context, cfg BenchConfig) (*BenchResult, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	mon, err := cfg.Open(ctx)
	if err != nil {
		return nil, err
	}
	runID := fmt.Sprintf("bench-%s-%d-%d", cfg.Mode, cfg.Workers, time.Now().UnixNano())
	r := &Record{Run: runID, Created: time.Now().UTC(), Options: Options{Shards: cfg.Shards, NoIntents: true, BidWindowMS: 10}}
	specs := simSpecs(cfg.Tasks, cfg.Work, cfg.DepRate, cfg.Seed)
	for _, sp := range specs {
		r.Tasks = append(r.Tasks, sp.name)
	}
	// Clients: one per host of up to HostSize workers.
	nHosts := (cfg.Workers + cfg.HostSize - 1) / cfg.HostSize
	var clients []BenchClient
	open := func() (BenchClient, error) {
		if cfg.Shared && len(clients) > 0 {
			return clients[0], nil
		}
		return cfg.Open(ctx)
	}
	for range nHosts {
		c, err := open()
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}
	var central BenchClient
	if cfg.Mode == BenchCentral {
		if central, err = open(); err != nil {
			return nil, err
		}
	}
	exec := &SimExecutor{}
	// The run is published before the clock starts; hosts begin when its
	// record appears.
	if err := publishTasks(ctx, mon.Store, r, specs); err != nil {
		return nil, err
	}
	var before board.MeterCounts
	all := clients
	if central.Store != nil {
		all = append(append([]BenchClient{}, clients...), central)
	}
	if cfg.Shared {
		all = clients[:1]
	}
	for _, c := range all {
		before = before.Add(c.Counts())
	}
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	var wg sync.WaitGroup
	errs := make(chan error, nHosts+1)
	start := time.Now()
	if err := publishRun(ctx, mon.Store, r); err != nil {
		return nil, err
	}
	for h := range nHosts {
		var workers []WorkerSpec
		for i := h * cfg.HostSize; i < min((h+1)*cfg.HostSize, cfg.Workers); i++ {
			workers = append(workers, WorkerSpec{ID: fmt.Sprintf("w%04d", i), Slots: 1})
		}
		host := fmt.Sprintf("h%03d", h)
		st := clients[h].Store
		wg.Go(func() {
			var err error
			if cfg.Mode == BenchSelf {
				err = RunHost(hctx, HostConfig{Store: st, Host: host, Workers: workers, Exec: exec, Run: runID,
					UntilFinished: true, Logger: cfg.Logger})
			} else {
				env := &runEnv{st: st, run: r, clock: board.SystemClock(), log: cfg.Logger, host: host}
				err = runCentralHost(hctx, env, workers, exec, cfg.Heartbeat)
			}
			if err != nil && hctx.Err() == nil {
				errs <- err
			}
		})
	}
	if cfg.Mode == BenchCentral {
		wg.Go(func() {
			env := &runEnv{st: central.Store, run: r, clock: board.SystemClock(), log: cfg.Logger, host: "scheduler"}
			if err := runCentralScheduler(hctx, env, cfg.Heartbeat); err != nil && hctx.Err() == nil {
				errs <- err
			}
		})
	}
	werr := waitDrained(ctx, mon.Store, runID, cfg.Tasks, errs)
	drain := time.Since(start)
	var after board.MeterCounts
	for _, c := range all {
		after = after.Add(c.Counts())
	}
	if werr == nil {
		werr = finishRun(ctx, mon.Store, runID)
	}
	hcancel()
	wg.Wait()
	if werr != nil {
		return nil, werr
	}
	res := &BenchResult{Mode: cfg.Mode, Workers: cfg.Workers, Tasks: cfg.Tasks, Hosts: nHosts, DrainS: drain.Seconds(),
		Counts: after.Sub(before)}
	res.ClaimsPerS = float64(cfg.Tasks) / drain.Seconds()
	res.MessagesPerTask = float64(res.Counts.Messages()) / float64(cfg.Tasks)
	res.WritesPerTask = float64(res.Counts.Writes()) / float64(cfg.Tasks)
	runs := exec.Executions()
	for _, sp := range specs {
		switch n := runs[taskID(runID, sp.name)]; {
		case n == 0:
			res.Missing++
		case n > 1:
			res.Duplicated++
		}
	}
	tasks, err := runTasks(ctx, mon.Store, runID)
	if err != nil {
		return nil, err
	}
	done := 0
	for _, t := range tasks {
		if t.Status == board.TaskDone {
			done++
		}
	}
	res.ExactlyOnce = res.Missing == 0 && res.Duplicated == 0 && done == cfg.Tasks
	// The next run starts on a board as empty as this one did: without
	// this, a shared etcd cluster carries every earlier run's keys and
	// history into the later (larger) runs.
	pctx, pcancel := context.WithTimeout(parent, 5*time.Minute) // not counted against the drain
	defer pcancel()
	if err := purgeRun(pctx, mon.Store, runID); err != nil {
		return nil, fmt.Errorf("swarm bench: clearing the board after the run: %w", err)
	}
	return res, nil
}

// purgeRun deletes every key of a finished benchmark run and compacts the
// board's history up to now.
func purgeRun(ctx context.Context, st *board.Store, run string) error {
	for _, prefix := range []string{runPrefix(run), runTaskPrefix(run), runClaimPrefix(run),
		board.PrefixFences + esc(run+"/"), runKey(run)} {
		kvs, _, err := st.List(ctx, prefix)
		if err != nil {
			return err
		}
		ops := make([]board.Op, 0, len(kvs))
		for _, kv := range kvs {
			ops = append(ops, board.DeleteOp(kv.Key))
		}
		if err := writeBatches(ctx, st, ops); err != nil {
			return err
		}
	}
	rev, err := st.Revision(ctx)
	if err != nil {
		return err
	}
	return st.Compact(ctx, rev)
}

// waitDrained blocks until n tasks of run are done.
func waitDrained(ctx context.Context, st *board.Store, run string, n int, errs <-chan error) error {
	done := map[string]bool{}
	ch, err := follow(ctx, st, runTaskPrefix(run), func(ev board.Event) {
		if ev.Type != board.EventPut {
			return
		}
		if t, err := board.DecodeTask(board.KV{Key: ev.Key, Value: ev.Value, ModRevision: ev.Revision}); err == nil && terminal(t.Status) {
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
