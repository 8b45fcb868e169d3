package etcd

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/boardtest"
	"github.com/apiary-dev/apiary/internal/board/etcd/etcdproc"
	"github.com/apiary-dev/apiary/internal/board/etcd/etcdtest"
	"github.com/apiary-dev/apiary/internal/envtest"
)

var full = flag.Bool("etcd.full", false, "measure the claim path at scale against etcd's own capacity (make bench)")

func meteredOpener(endpoints []string) func(ctx context.Context) (*board.Store, func() board.MeterCounts, error) {
	return func(ctx context.Context) (*board.Store, func() board.MeterCounts, error) {
		b, err := OpenBackend(ctx, endpoints, Options{})
		if err != nil {
			return nil, nil, err
		}
		m := board.NewMeter(b)
		return board.New(m, board.Options{}), m.Counts, nil
	}
}

// TestClaimPath drains tasks through the claim path of the board's
// primitives on a 3-member cluster, each host its own client: every task
// worked once, at most three board writes per task, no lease per task.
func TestClaimPath(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, envtest.Command(t, "etcd"), 3)
	res, err := boardtest.ClaimPath(t.Context(), boardtest.ClaimPathConfig{
		Open: meteredOpener(c.Endpoints()), Hosts: 3, Workers: 8, Prefetch: 2, Tasks: 200, Work: 2 * time.Millisecond, Prefix: "path/",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *res)
	if !res.ExactlyOnce {
		t.Fatal("a task was not worked exactly once")
	}
	if res.WritesPerTask > 3 || res.Counts.Grant != 0 || res.Counts.Revoke != 0 {
		t.Fatalf("%.2f board writes per task (%+v), want at most 3 and no lease per task", res.WritesPerTask, res.Counts)
	}
}

// TestClaimPathScale is the measurement behind docs/benchmarks.md: on a
// 3-member loopback cluster with etcd's default timing (as bench swarm
// starts it), etcd's own rate for claim-shaped transactions, then the
// claim path draining 4,000 tasks of 50 ms at 16 to 1,024 workers (64 per
// host), in the same run. It runs only with -etcd.full:
//
//	go test ./internal/board/etcd -run TestClaimPathScale -etcd.full -v -timeout 30m
func TestClaimPathScale(t *testing.T) {
	if !*full {
		t.Skip("the measurement runs with -etcd.full")
	}
	c, err := etcdproc.Start(t.Context(), etcdproc.Options{Bin: envtest.Command(t, "etcd"), Members: 3, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	rates, err := etcdproc.Capacity(t.Context(), c.Endpoints(), etcdproc.CapacityOptions{Concurrency: []int{16, 64, 256}, Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	best := 0.0
	for _, r := range rates {
		t.Logf("etcd capacity: %4d in flight: %6.0f claim txn/s (p50 %.1f ms, p99 %.1f ms, %d failed)", r.Concurrency, r.PerSecond,
			float64(r.P50)/1e6, float64(r.P99)/1e6, r.Errors)
		best = max(best, r.PerSecond)
	}
	t.Logf("| workers | hosts | drain (s) | claims/s | of etcd's best %.0f txn/s | writes/task | messages/task | exactly once |", best)
	for _, workers := range []int{16, 64, 256, 1024} {
		hosts := max(1, workers/64)
		res, err := boardtest.ClaimPath(t.Context(), boardtest.ClaimPathConfig{
			Open: meteredOpener(c.Endpoints()), Hosts: hosts, Workers: workers / hosts, Prefetch: max(4, workers/hosts/4), Tasks: 4000, Work: 50 * time.Millisecond,
			Prefix: fmt.Sprintf("scale-%d/", workers),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("| %d | %d | %.1f | %.0f | %.0f %% | %.2f | %.2f | %v |", workers, hosts, res.DrainS, res.ClaimsPerS, 100*res.ClaimsPerS/best,
			res.WritesPerTask, res.MessagesPerTask, res.ExactlyOnce)
		if !res.ExactlyOnce {
			t.Errorf("%d workers: not exactly once", workers)
		}
	}
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		t.Logf("load average at the end: %s", la)
	}
}
