package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/board/etcd/etcdproc"
)

// Board kinds of the swarm benchmark.
const (
	BoardLocal = "local"
	BoardEtcd  = "etcd"
)

// SwarmConfig is one run of `apiary bench swarm`: for each board, each
// worker count and each mode, RunSwarm drains Tasks simulated tasks.
// The zero value of every field but Workers, Tasks, Boards and Modes is a
// sensible default.
type SwarmConfig struct {
	Workers []int
	Tasks   int
	Work    time.Duration // mean simulated work per task (default 50 ms)
	Boards  []string      // BoardLocal, BoardEtcd
	Modes   []string      // SwarmCentral, SwarmSelf
	// EtcdDSN is the etcd board to use; "" starts a 3-member cluster on
	// loopback from the etcd binary on PATH.
	EtcdDSN string
	// HostSize workers share one board client (a process) on etcd; Shards
	// of the self-organizing mode; Prefetch, see SwarmRunConfig.
	HostSize, Shards, Prefetch int
	// Timeout bounds one drain; a drain that does not finish is reported
	// and the others go on.
	Timeout time.Duration
	// NoCapacity skips measuring etcd's own claim-transaction rate on the
	// cluster (etcdproc.Capacity, before and after the etcd runs), which
	// the etcd rows' claims per second are reported as a fraction of.
	NoCapacity bool
	// Capacity configures that measurement (its zero value: 1, 16, 64 and
	// 256 in flight, 3 s each).
	Capacity etcdproc.CapacityOptions
	// Dir holds the local boards and the etcd cluster's data; "" makes a
	// temporary directory, removed afterwards.
	Dir string
	// Progress, if set, hears what is being measured.
	Progress io.Writer
}

// SwarmRow is one measured configuration.
type SwarmRow struct {
	Board string `json:"board"`
	SwarmResult
	// OfCapacity is ClaimsPerS as a fraction of the cluster's measured
	// claim-transaction rate (etcd rows; 0 when not measured).
	OfCapacity float64 `json:"of_capacity,omitempty"`
}

// SwarmReport is what Swarm measured.
type SwarmReport struct {
	Tasks int           `json:"tasks"`
	Work  time.Duration `json:"work_ns"`
	Rows  []SwarmRow    `json:"rows"`
	// Capacity is etcd's own rate at each concurrency, measured before
	// and after the etcd runs; CapacityTxnPerS the highest of them, the
	// cluster's ceiling the rows are read against.
	Capacity        []etcdproc.Rate `json:"capacity,omitempty"`
	CapacityTxnPerS float64         `json:"capacity_txn_per_s,omitempty"`
	// Failed lists the runs that did not drain within the timeout.
	Failed []string `json:"failed,omitempty"`
}

// ErrUndrained: some runs did not drain within the timeout (the report
// holds the others).
var ErrUndrained = errors.New("bench swarm: some runs did not drain within the timeout")

func (c *SwarmConfig) defaults() error {
	if len(c.Workers) == 0 || c.Tasks < 1 || len(c.Boards) == 0 || len(c.Modes) == 0 {
		return fmt.Errorf("bench swarm: workers, tasks, boards and modes are required")
	}
	for _, b := range c.Boards {
		if b != BoardLocal && b != BoardEtcd {
			return fmt.Errorf("bench swarm: unknown board %q", b)
		}
	}
	for _, m := range c.Modes {
		if m != SwarmCentral && m != SwarmSelf {
			return fmt.Errorf("bench swarm: unknown mode %q", m)
		}
	}
	if c.Work <= 0 {
		c.Work = 50 * time.Millisecond
	}
	if c.HostSize <= 0 {
		c.HostSize = 64
	}
	if c.Shards <= 0 {
		c.Shards = 8
	}
	if c.Timeout <= 0 {
		c.Timeout = 15 * time.Minute
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return nil
}

// Swarm runs the benchmark. It returns the report with ErrUndrained when
// some runs did not drain in time; with ctx's error when ctx ends.
func Swarm(ctx context.Context, cfg SwarmConfig) (*SwarmReport, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	dir := cfg.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "apiary-bench-swarm-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	rep := &SwarmReport{Tasks: cfg.Tasks, Work: cfg.Work}
	for _, kind := range cfg.Boards {
		b, err := openBenchBoard(ctx, &cfg, kind, dir)
		if err != nil {
			return rep, err
		}
		err = b.measure(ctx, &cfg, rep)
		b.stop()
		if err != nil {
			return rep, err
		}
	}
	if len(rep.Failed) > 0 {
		return rep, ErrUndrained
	}
	return rep, nil
}

// benchBoard is one board kind's boards: fresh returns how to open
// clients of a new, empty board — a local database (measured with one
// shared client, as one process would use it) or a new key prefix on etcd
// (a given cluster, or one started here).
type benchBoard struct {
	kind      string
	fresh     func() func(context.Context) (SwarmClient, error)
	shared    bool
	endpoints []string // etcd
	stop      func()
}

func openBenchBoard(ctx context.Context, cfg *SwarmConfig, kind, dir string) (*benchBoard, error) {
	var stores []*board.Store
	b := &benchBoard{kind: kind}
	b.stop = func() {
		for _, s := range stores {
			s.Close()
		}
	}
	openDSN := func(dsn string) func(context.Context) (SwarmClient, error) {
		return func(ctx context.Context) (SwarmClient, error) {
			st, m, err := connect.OpenMetered(ctx, dsn, connect.Options{})
			if err != nil {
				return SwarmClient{}, err
			}
			stores = append(stores, st)
			return SwarmClient{Store: st, Counts: m.Counts}, nil
		}
	}
	runs := 0
	if kind == BoardLocal {
		b.shared = true
		b.fresh = func() func(context.Context) (SwarmClient, error) {
			runs++
			return openDSN("local:" + filepath.Join(dir, "local", strconv.Itoa(runs), "state.db"))
		}
		return b, nil
	}
	dsn := cfg.EtcdDSN
	if dsn == "" {
		if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o755); err != nil {
			return nil, err
		}
		cluster, err := etcdproc.Start(ctx, etcdproc.Options{Members: 3, Dir: filepath.Join(dir, "etcd")})
		if err != nil {
			return nil, fmt.Errorf("starting etcd (or pass an etcd DSN): %w", err)
		}
		fmt.Fprintf(cfg.Progress, "bench swarm: started a 3-member etcd cluster at %s\n", strings.Join(cluster.Endpoints(), ","))
		dsn = "etcd://" + strings.Join(cluster.Endpoints(), ",")
		prev := b.stop
		b.stop = func() {
			prev()
			cluster.Stop()
		}
	}
	d, err := board.ParseDSN(dsn)
	if err != nil || d.Kind != board.KindEtcd {
		b.stop()
		return nil, fmt.Errorf("bench swarm: etcd DSN %q: want etcd://HOST:PORT[,...]", dsn)
	}
	b.endpoints = d.Endpoints
	base := d.Prefix
	b.fresh = func() func(context.Context) (SwarmClient, error) {
		runs++
		d.Prefix = base + fmt.Sprintf("apiary-bench-%d-%d/", time.Now().UnixNano(), runs)
		return openDSN(d.String())
	}
	return b, nil
}

// measure runs every worker count and mode on the board, and on etcd the
// cluster's own capacity before and after.
func (b *benchBoard) measure(ctx context.Context, cfg *SwarmConfig, rep *SwarmReport) error {
	capacity := b.kind == BoardEtcd && !cfg.NoCapacity
	if capacity {
		if err := b.capacity(ctx, cfg, rep, "before"); err != nil {
			return err
		}
	}
	first := len(rep.Rows)
	for _, n := range cfg.Workers {
		for _, m := range cfg.Modes {
			fmt.Fprintf(cfg.Progress, "bench swarm: %s board, %s, %d workers, %d tasks...\n", b.kind, m, n, cfg.Tasks)
			res, err := RunSwarm(ctx, SwarmRunConfig{Mode: m, Workers: n, Tasks: cfg.Tasks, Work: cfg.Work,
				HostSize: cfg.HostSize, Shards: cfg.Shards, Prefetch: cfg.Prefetch, Seed: uint64(n),
				Open: b.fresh(), Shared: b.shared, Timeout: cfg.Timeout})
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				// One size that does not drain in time is a result too:
				// report it and measure the rest.
				fmt.Fprintf(cfg.Progress, "  did not drain: %v\n", err)
				rep.Failed = append(rep.Failed, fmt.Sprintf("%s %s %d: %v", b.kind, m, n, err))
				continue
			}
			rep.Rows = append(rep.Rows, SwarmRow{Board: b.kind, SwarmResult: *res})
			fmt.Fprintf(cfg.Progress, "  drain %.1fs, %.0f claims/s, %.1f messages/task, %.2f writes/task, exactly once: %v\n",
				res.DrainS, res.ClaimsPerS, res.MessagesPerTask, res.WritesPerTask, res.ExactlyOnce)
		}
	}
	if capacity {
		if err := b.capacity(ctx, cfg, rep, "after"); err != nil {
			return err
		}
		for i := first; i < len(rep.Rows); i++ {
			rep.Rows[i].OfCapacity = rep.Rows[i].ClaimsPerS / rep.CapacityTxnPerS
		}
	}
	return nil
}

// capacity measures etcd's claim-transaction rate on the board's cluster.
func (b *benchBoard) capacity(ctx context.Context, cfg *SwarmConfig, rep *SwarmReport, when string) error {
	fmt.Fprintf(cfg.Progress, "bench swarm: etcd's own claim-transaction rate (%s the runs)...\n", when)
	opt := cfg.Capacity
	opt.Progress = func(r etcdproc.Rate) {
		fmt.Fprintf(cfg.Progress, "  %d in flight: %.0f txn/s (p50 %v, p99 %v, %d failed)\n", r.Concurrency, r.PerSecond,
			r.P50.Round(time.Microsecond*100), r.P99.Round(time.Microsecond*100), r.Errors)
	}
	rates, err := etcdproc.Capacity(ctx, b.endpoints, opt)
	if err != nil {
		return fmt.Errorf("bench swarm: etcd capacity: %w", err)
	}
	rep.Capacity = append(rep.Capacity, rates...)
	for _, r := range rates {
		rep.CapacityTxnPerS = max(rep.CapacityTxnPerS, r.PerSecond)
	}
	return nil
}
