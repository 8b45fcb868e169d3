//go:build unix

package etcdproc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/apiary-dev/apiary/internal/envtest"
)

var full = flag.Bool("etcdproc.full", false, "also run etcdctl check perf for its whole minute (make bench)")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// alive reports whether a process with pid exists (and is not a zombie we
// could still reap: Stop reaps its members).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func client(t *testing.T, c *Cluster) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestStartStop: a 3-member cluster answers and replicates; Stop kills every
// member by pid and removes the data; a killed member is noticed.
func TestStartStop(t *testing.T) {
	t.Parallel()
	bin := envtest.Command(t, "etcd")
	c, err := Start(t.Context(), Options{Bin: bin, Members: 3, Dir: t.TempDir(), Heartbeat: 50 * time.Millisecond, Election: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	cli := client(t, c)
	if _, err := cli.Put(t.Context(), "k", "v"); err != nil {
		t.Fatal(err)
	}
	for _, ep := range c.Endpoints() {
		st, err := cli.Status(t.Context(), ep)
		if err != nil {
			t.Fatalf("status of %s: %v", ep, err)
		}
		if st.Header.ClusterId == 0 || len(c.Members) != 3 {
			t.Fatalf("member %s: %+v", ep, st)
		}
	}
	victim := c.Members[2]
	pid := victim.Pid()
	victim.Kill()
	if victim.Alive() || alive(pid) {
		t.Fatalf("member %d survived Kill", pid)
	}
	if c.Healthy(t.Context()) {
		t.Fatal("Healthy with a member killed")
	}
	if _, err := cli.Put(t.Context(), "k", "v2"); err != nil { // two of three still make a quorum
		t.Fatal(err)
	}
	pids := []int{c.Members[0].Pid(), c.Members[1].Pid()}
	dir := c.Dir
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		if alive(p) {
			t.Errorf("member %d survived Stop", p)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data directory %s survived Stop: %v", dir, err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// TestBadBinary: a binary that is not there, or exits at once, is an error
// naming why, and leaves nothing behind.
func TestBadBinary(t *testing.T) {
	t.Parallel()
	if _, err := Start(t.Context(), Options{Bin: "/nonexistent/etcd"}); err == nil {
		t.Fatal("Start with a missing binary succeeded")
	}
	dir := t.TempDir()
	_, err := Start(t.Context(), Options{Bin: envtest.Command(t, "false"), Dir: dir, Ready: 5 * time.Second})
	if !errors.Is(err, ErrNotHealthy) {
		t.Fatalf("Start with a binary that exits: %v, want ErrNotHealthy", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a failed Start left %d entries in %s", len(ents), dir)
	}
}

// TestParentDies kills (kill -9) a process that started a cluster; the
// kernel must end its members.
func TestParentDies(t *testing.T) {
	t.Parallel()
	bin := envtest.Command(t, "etcd")
	cmd := exec.Command(os.Args[0], "-test.run=^TestParentHelper$")
	cmd.Env = append(os.Environ(), "APIARY_ETCDPROC_HELPER="+bin, "APIARY_ETCDPROC_DIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 64)
	n, err := io.ReadAtLeast(out, line, 1)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(line[:n])) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("helper said %q", line[:n])
		}
		pids = append(pids, p)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pids {
		for alive(p) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(p) {
			syscall.Kill(-p, syscall.SIGKILL)
			t.Errorf("member %d outlived its parent", p)
		}
	}
}

// TestParentHelper is the parent TestParentDies kills.
func TestParentHelper(t *testing.T) {
	bin := os.Getenv("APIARY_ETCDPROC_HELPER")
	if bin == "" {
		t.Skip("run by TestParentDies")
	}
	c, err := Start(context.Background(), Options{Bin: bin, Members: 2, Dir: os.Getenv("APIARY_ETCDPROC_DIR")})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%d %d\n", c.Members[0].Pid(), c.Members[1].Pid())
	time.Sleep(time.Minute)
}

// TestCapacity measures a short claim-shaped load and leaves no key behind.
func TestCapacity(t *testing.T) {
	t.Parallel()
	c, err := Start(t.Context(), Options{Bin: envtest.Command(t, "etcd"), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	var heard []Rate
	rates, err := Capacity(t.Context(), c.Endpoints(), CapacityOptions{Concurrency: []int{1, 8}, Duration: 300 * time.Millisecond, PerClient: 4, Progress: func(r Rate) { heard = append(heard, r) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rates) != 2 || len(heard) != 2 {
		t.Fatalf("rates %+v, heard %+v", rates, heard)
	}
	for _, r := range rates {
		if r.Txns <= 0 || r.PerSecond <= 0 || r.P50 <= 0 || r.P99 < r.P50 {
			t.Errorf("rate %+v", r)
		}
	}
	if rates[1].Clients != 2 {
		t.Errorf("8 in flight at 4 per client used %d clients", rates[1].Clients)
	}
	resp, err := client(t, c).Get(t.Context(), "apiary-capacity/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("%d keys left under the load's prefix", resp.Count)
	}
	if _, err := Capacity(t.Context(), c.Endpoints(), CapacityOptions{Concurrency: []int{0}}); err == nil {
		t.Error("concurrency 0 accepted")
	}
}

// TestCheckPerf runs etcdctl check perf: whole only with -etcdproc.full (it
// takes a minute); otherwise it checks that a check cut short by its context
// is an error and leaves no etcdctl running.
func TestCheckPerf(t *testing.T) {
	t.Parallel()
	etcdctl := envtest.Command(t, "etcdctl")
	c, err := Start(t.Context(), Options{Bin: envtest.Command(t, "etcd"), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if *full {
		out, err := CheckPerf(t.Context(), etcdctl, c.Endpoints(), "s")
		if err != nil || !strings.Contains(out, "Throughput") {
			t.Fatalf("check perf: %v\n%s", err, out)
		}
		t.Log(out)
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := CheckPerf(ctx, etcdctl, c.Endpoints(), "s"); err == nil {
		t.Fatal("a check cut short reported success")
	}
	if _, err := CheckPerf(t.Context(), "/nonexistent/etcdctl", c.Endpoints(), ""); err == nil {
		t.Fatal("a missing etcdctl reported success")
	}
}

// TestCapacity3Members measures etcd's own claim rate on a 3-member
// loopback cluster (etcd's default Raft timing, as bench swarm starts it)
// and runs etcdctl check perf on it. It is the measurement behind
// docs/benchmarks.md and runs only with -etcdproc.full (make bench):
//
//	go test ./internal/board/etcd/etcdproc -run TestCapacity3Members -etcdproc.full -v
func TestCapacity3Members(t *testing.T) {
	if !*full {
		t.Skip("the measurement runs with -etcdproc.full")
	}
	c, err := Start(t.Context(), Options{Bin: envtest.Command(t, "etcd"), Members: 3, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	rates, err := Capacity(t.Context(), c.Endpoints(), CapacityOptions{
		Concurrency: []int{1, 4, 16, 64, 256}, Duration: 5 * time.Second,
		Progress: func(r Rate) {
			t.Logf("%5d in flight, %3d clients: %7.0f txn/s  p50 %6.2f ms  p99 %6.2f ms  %d failed", r.Concurrency, r.Clients, r.PerSecond,
				float64(r.P50)/1e6, float64(r.P99)/1e6, r.Errors)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rates {
		if r.Txns == 0 {
			t.Errorf("no transactions at %d in flight", r.Concurrency)
		}
	}
	if _, err := exec.LookPath("etcdctl"); err == nil {
		out, err := CheckPerf(t.Context(), "", c.Endpoints(), "s")
		if err != nil {
			t.Errorf("check perf: %v", err)
		}
		// The progress bar redraws itself with carriage returns.
		lines := strings.Split(out, "\n")
		for i, l := range lines {
			if j := strings.LastIndexByte(l, '\r'); j >= 0 {
				lines[i] = l[j+1:]
			}
		}
		t.Logf("etcdctl check perf --load=s:\n%s", strings.Join(lines, "\n"))
	} else if envtest.InCI() {
		t.Error("etcdctl is not installed (etcd-client)")
	}
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		t.Logf("load average at the end: %s", la)
	}
}
