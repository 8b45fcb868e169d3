package bench

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm"
)

// Modes of the swarm scale benchmark.
const (
	SwarmCentral = "central" // one scheduler assigns every task to the hosts that ask
	SwarmSelf    = "self"    // workers claim through shard gatekeepers
)

// SwarmClient is one board client of the benchmark (a process): its store
// and the count of its board traffic so far.
type SwarmClient struct {
	Store  *board.Store
	Counts func() board.MeterCounts
}

// SwarmRunConfig describes one run of the swarm scale benchmark: Workers
// in-process workers drain Tasks simulated tasks from one board.
type SwarmRunConfig struct {
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
	// Shards of the self-organizing mode (default 8).
	Shards int
	// Prefetch is how many tasks each worker (self-organizing) or each
	// host (central) asks for beyond its free slots, so that a short
	// task's successor is claimed while it runs (default 0).
	Prefetch int
	Seed     uint64
	// Open connects a new client to the board (the same board every
	// time): one for the benchmark's own monitoring, not counted, and one
	// per host. With Shared, it is called just twice — the monitor's and
	// one client every host (and the central scheduler) shares, as the
	// in-process workers of one process do; the local board, which
	// serializes writers on a file lock, is measured that way.
	Open   func(ctx context.Context) (SwarmClient, error)
	Shared bool
	// Timeout bounds the drain (default 10m).
	Timeout time.Duration
	Logger  *slog.Logger
}

// SwarmResult is one benchmark run's outcome.
type SwarmResult struct {
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

func (c *SwarmRunConfig) defaults() error {
	if c.Mode != SwarmCentral && c.Mode != SwarmSelf {
		return fmt.Errorf("%w: bench mode %q", swarm.ErrConfig, c.Mode)
	}
	if c.Workers <= 0 || c.Tasks <= 0 || c.Open == nil {
		return fmt.Errorf("%w: bench needs workers, tasks and a board", swarm.ErrConfig)
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
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// simTasks makes n tasks with simulated work and a few dependencies on
// earlier tasks.
func simTasks(n int, work time.Duration, depRate float64, seed uint64) []swarm.SimTask {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	tasks := make([]swarm.SimTask, n)
	for i := range tasks {
		t := swarm.SimTask{Name: "t" + strconv.Itoa(i), Prio: float64(n - i),
			WorkS: (work.Seconds() / 2) + rng.Float64()*work.Seconds()}
		if i > 0 && rng.Float64() < depRate {
			d := i - 1 - rng.IntN(min(i, 200))
			t.Deps = append(t.Deps, "t"+strconv.Itoa(d))
		}
		tasks[i] = t
	}
	return tasks
}

// RunSwarm publishes cfg.Tasks simulated tasks, lets cfg.Workers
// in-process workers drain them in cfg.Mode, and reports the time to
// drain, claims per second, board messages per task and whether every task
// was worked exactly once.
func RunSwarm(ctx context.Context, cfg SwarmRunConfig) (*SwarmResult, error) {
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
	opts := swarm.Options{Shards: cfg.Shards, NoIntents: true, BidWindowMS: 10}
	tasks := simTasks(cfg.Tasks, cfg.Work, cfg.DepRate, cfg.Seed)
	// Clients: one per host of up to HostSize workers.
	nHosts := (cfg.Workers + cfg.HostSize - 1) / cfg.HostSize
	var clients []SwarmClient
	open := func() (SwarmClient, error) {
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
	var central SwarmClient
	if cfg.Mode == SwarmCentral {
		if central, err = open(); err != nil {
			return nil, err
		}
	}
	exec := &swarm.SimExecutor{}
	// The run is published before the clock starts; hosts begin when its
	// record appears.
	sim, err := swarm.PublishSim(ctx, mon.Store, runID, opts, tasks)
	if err != nil {
		return nil, err
	}
	var before board.MeterCounts
	all := clients
	if central.Store != nil {
		all = append(append([]SwarmClient{}, clients...), central)
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
	if err := sim.Start(ctx); err != nil {
		return nil, err
	}
	for h := range nHosts {
		var workers []swarm.WorkerSpec
		for i := h * cfg.HostSize; i < min((h+1)*cfg.HostSize, cfg.Workers); i++ {
			workers = append(workers, swarm.WorkerSpec{ID: fmt.Sprintf("w%04d", i), Slots: 1})
		}
		host := swarm.HostConfig{Store: clients[h].Store, Host: fmt.Sprintf("h%03d", h), Workers: workers, Exec: exec,
			Prefetch: cfg.Prefetch, Logger: cfg.Logger}
		wg.Go(func() {
			var err error
			if cfg.Mode == SwarmSelf {
				host.Run, host.UntilFinished = runID, true
				err = swarm.RunHost(hctx, host)
			} else {
				err = sim.CentralHost(hctx, host)
			}
			if err != nil && hctx.Err() == nil {
				errs <- err
			}
		})
	}
	if cfg.Mode == SwarmCentral {
		wg.Go(func() {
			if err := sim.Scheduler(hctx, central.Store, cfg.Logger); err != nil && hctx.Err() == nil {
				errs <- err
			}
		})
	}
	werr := sim.Wait(ctx, errs)
	drain := time.Since(start)
	var after board.MeterCounts
	for _, c := range all {
		after = after.Add(c.Counts())
	}
	if werr == nil {
		werr = sim.Finish(ctx)
	}
	hcancel()
	wg.Wait()
	if werr != nil {
		return nil, werr
	}
	res := &SwarmResult{Mode: cfg.Mode, Workers: cfg.Workers, Tasks: cfg.Tasks, Hosts: nHosts, DrainS: drain.Seconds(),
		Counts: after.Sub(before)}
	res.ClaimsPerS = float64(cfg.Tasks) / drain.Seconds()
	res.MessagesPerTask = float64(res.Counts.Messages()) / float64(cfg.Tasks)
	res.WritesPerTask = float64(res.Counts.Writes()) / float64(cfg.Tasks)
	tally, err := sim.Tally(ctx, exec)
	if err != nil {
		return nil, err
	}
	res.Missing, res.Duplicated = tally.Missing, tally.Duplicated
	res.ExactlyOnce = res.Missing == 0 && res.Duplicated == 0 && tally.Done == cfg.Tasks
	// The next run starts on a board as empty as this one did: without
	// this, a shared etcd cluster carries every earlier run's keys and
	// history into the later (larger) runs.
	pctx, pcancel := context.WithTimeout(parent, 5*time.Minute) // not counted against the drain
	defer pcancel()
	if err := sim.Purge(pctx); err != nil {
		return nil, fmt.Errorf("swarm bench: clearing the board after the run: %w", err)
	}
	return res, nil
}
