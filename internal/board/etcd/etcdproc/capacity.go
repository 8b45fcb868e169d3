package etcdproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// CapacityOptions configure Capacity. The zero value measures 1, 16, 64
// and 256 concurrent requests for 3 s each under "apiary-capacity/".
type CapacityOptions struct {
	// Concurrency lists the numbers of requests kept in flight.
	Concurrency []int
	// Duration is how long each level runs; default 3 s.
	Duration time.Duration
	// PerClient is how many of the requests in flight share one client
	// (one connection), as workers of one process would; default 64.
	PerClient int
	// Prefix is where the load writes; default "apiary-capacity/". It is
	// deleted afterwards.
	Prefix string
	// Progress, if set, hears about each level as it ends.
	Progress func(Rate)
}

// Rate is the measured throughput at one concurrency.
type Rate struct {
	Concurrency int           `json:"concurrency"`
	Clients     int           `json:"clients"`
	Txns        int64         `json:"txns"`
	Errors      int64         `json:"errors"` // requests that failed (timed out under overload, say); not in Txns
	Seconds     float64       `json:"seconds"`
	PerSecond   float64       `json:"txn_per_s"`
	P50         time.Duration `json:"p50_ns"`
	P99         time.Duration `json:"p99_ns"`
}

// Capacity measures the transaction rate the etcd cluster at endpoints
// sustains for the board's claim: one transaction that creates a key only
// if it is absent and binds it to a lease, and writes the durable fence
// record beside it —
//
//	Txn(If(CreateRevision(claims/K) == 0)).Then(Put(claims/K, v, WithLease(L)), Put(fences/K, v))
//
// with a new K every time and one lease per client (a host's lease), at each
// concurrency of opt. It is etcd's own ceiling for claims, measured with the
// same client library the board uses; a board's claims per second are read
// as a fraction of it.
func Capacity(ctx context.Context, endpoints []string, opt CapacityOptions) ([]Rate, error) {
	if len(opt.Concurrency) == 0 {
		opt.Concurrency = []int{1, 16, 64, 256}
	}
	if opt.Duration <= 0 {
		opt.Duration = 3 * time.Second
	}
	if opt.PerClient <= 0 {
		opt.PerClient = 64
	}
	if opt.Prefix == "" {
		opt.Prefix = "apiary-capacity/"
	}
	var out []Rate
	for _, c := range opt.Concurrency {
		if c <= 0 {
			return out, fmt.Errorf("etcdproc: concurrency %d", c)
		}
		r, err := measure(ctx, endpoints, opt, c)
		if err != nil {
			return out, err
		}
		out = append(out, r)
		if opt.Progress != nil {
			opt.Progress(r)
		}
	}
	return out, nil
}

func measure(ctx context.Context, endpoints []string, opt CapacityOptions, conc int) (Rate, error) {
	nc := (conc + opt.PerClient - 1) / opt.PerClient
	clients := make([]*clientv3.Client, 0, nc)
	leases := make([]clientv3.LeaseID, 0, nc)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for i, cli := range clients {
			if i < len(leases) {
				_, _ = cli.Revoke(cctx, leases[i]) // deletes the claims
			}
		}
		if len(clients) > 0 {
			_, _ = clients[0].Delete(cctx, opt.Prefix, clientv3.WithPrefix()) // and the fences
		}
		for _, cli := range clients {
			cli.Close()
		}
	}()
	for range nc {
		cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return Rate{}, fmt.Errorf("etcdproc: capacity: %w", err)
		}
		clients = append(clients, cli)
		l, err := cli.Grant(ctx, 120)
		if err != nil {
			return Rate{}, fmt.Errorf("etcdproc: capacity: %w", err)
		}
		leases = append(leases, l.ID)
	}
	run := fmt.Sprintf("%s%d-%d/", opt.Prefix, time.Now().UnixNano(), conc)
	lctx, cancel := context.WithTimeout(ctx, opt.Duration)
	defer cancel()
	var n, failed atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error // a transaction that answered wrong: the measurement is void
	var wg sync.WaitGroup
	start := time.Now()
	for g := range conc {
		cli, lease := clients[g/opt.PerClient], leases[g/opt.PerClient]
		wg.Go(func() {
			var mine []time.Duration
			value := fmt.Sprintf(`{"task":"t","agent":"g%d","score":1,"lease":%d}`, g, lease)
			for i := 0; lctx.Err() == nil; i++ {
				k := fmt.Sprintf("%d/%d", g, i)
				t0 := time.Now()
				resp, err := cli.Txn(lctx).
					If(clientv3.Compare(clientv3.CreateRevision(run+"claims/"+k), "=", 0)).
					Then(clientv3.OpPut(run+"claims/"+k, value, clientv3.WithLease(lease)), clientv3.OpPut(run+"fences/"+k, value)).
					Commit()
				if lctx.Err() != nil {
					break
				}
				if err != nil {
					// An overloaded cluster times requests out: that is
					// part of what is measured, not a reason to stop.
					failed.Add(1)
					continue
				}
				if !resp.Succeeded {
					mu.Lock()
					if firstErr == nil {
						firstErr = errors.New("claim of a new key failed")
					}
					mu.Unlock()
					cancel()
					break
				}
				mine = append(mine, time.Since(t0))
				n.Add(1)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return Rate{}, fmt.Errorf("etcdproc: capacity at %d in flight: %w", conc, firstErr)
	}
	if err := ctx.Err(); err != nil {
		return Rate{}, err
	}
	slices.Sort(lat)
	r := Rate{Concurrency: conc, Clients: nc, Txns: n.Load(), Errors: failed.Load(), Seconds: elapsed.Seconds()}
	if r.Txns == 0 && r.Errors > 0 {
		return r, fmt.Errorf("etcdproc: capacity at %d in flight: all %d requests failed", conc, r.Errors)
	}
	r.PerSecond = float64(r.Txns) / r.Seconds
	if len(lat) > 0 {
		r.P50, r.P99 = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return r, nil
}

// CheckPerf runs `etcdctl check perf` (etcdctl is the client from
// Debian's etcd-client package; "" looks it up on PATH) against endpoints
// with the given load ("s", "m", "l", "xl"; "" is etcdctl's default, s) and
// returns what it printed. The check takes about a minute and writes under
// its own prefix, which it removes.
func CheckPerf(ctx context.Context, etcdctl string, endpoints []string, load string) (string, error) {
	if etcdctl == "" {
		etcdctl = "etcdctl"
	}
	path, err := exec.LookPath(etcdctl)
	if err != nil {
		return "", fmt.Errorf("etcdproc: %w", err)
	}
	args := []string{"--endpoints=" + strings.Join(endpoints, ","), "check", "perf"}
	if load != "" {
		args = append(args, "--load="+load)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error { killGroup(cmd.Process); return nil }
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("etcdproc: etcdctl check perf: %w", err)
	}
	return string(out), nil
}
