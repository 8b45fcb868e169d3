// Package etcdtest starts a real etcd cluster for tests: N member processes
// of an etcd server binary on free loopback ports, with data under
// t.TempDir(). Every member runs in its own process group and is killed with
// it in t.Cleanup (and by the kernel if the test process dies first), so
// nothing outlives the test. Callers find the binary with
// envtest.Command(t, "etcd"), which fails the test under CI=true when etcd is
// missing and skips it otherwise. It is imported only from _test.go files.
package etcdtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Member is one etcd process.
type Member struct {
	Name      string
	ClientURL string // http://127.0.0.1:PORT
	PeerURL   string
	Dir       string
	Log       string // the member's log file

	cmd    *exec.Cmd
	cancel context.CancelFunc // kills the process group
	done   chan struct{}      // closed when the process has been reaped
}

// Cluster is a running etcd cluster.
type Cluster struct {
	Members []*Member
}

// Endpoints returns every member's client address as HOST:PORT.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, strings.TrimPrefix(m.ClientURL, "http://"))
	}
	return eps
}

// freePorts reserves n loopback ports by binding and releasing them.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("etcdtest: reserve port: %v", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// Start launches an n-member cluster of the etcd server at bin and waits
// until every member reports healthy. Raft timing is shortened (50 ms
// heartbeat, 500 ms election) so failover and lease expiry (minimum TTL 1 s)
// are quick.
func Start(t testing.TB, bin string, n int) *Cluster {
	t.Helper()
	const attempts = 3 // a reserved port can be taken by someone else before etcd binds it
	var lastErr error
	for range attempts {
		c, err := start(t, bin, n)
		if err == nil {
			return c
		}
		lastErr = err
	}
	t.Fatalf("etcdtest: start %d-member cluster: %v", n, lastErr)
	return nil
}

func start(t testing.TB, bin string, n int) (*Cluster, error) {
	root, err := os.MkdirTemp(t.TempDir(), "etcd")
	if err != nil {
		return nil, err
	}
	ports := freePorts(t, 2*n)
	c := &Cluster{}
	var initial []string
	for i := range n {
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			Dir:       filepath.Join(root, fmt.Sprintf("m%d", i)),
		}
		m.Log = m.Dir + ".log"
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	token := filepath.Base(root)
	for _, m := range c.Members {
		if err := m.start(t, bin, strings.Join(initial, ","), token); err != nil {
			c.stop()
			return nil, err
		}
	}
	t.Cleanup(c.stop)
	if err := c.waitHealthy(t.Context(), 30*time.Second); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (m *Member) start(t testing.TB, bin, initial, token string) error {
	logf, err := os.Create(m.Log)
	if err != nil {
		return err
	}
	defer logf.Close()
	// The member lives until Kill or the cluster's Cleanup, past the context
	// of whichever (sub)test started it; cancelling kills its group.
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin,
		"--name", m.Name,
		"--data-dir", m.Dir,
		"--listen-client-urls", m.ClientURL,
		"--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL,
		"--initial-advertise-peer-urls", m.PeerURL,
		"--initial-cluster", initial,
		"--initial-cluster-token", token,
		"--initial-cluster-state", "new",
		"--heartbeat-interval", "50",
		"--election-timeout", "500",
		"--logger", "zap",
		"--log-outputs", "stderr",
		"--log-level", "warn",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		cancel()
		return fmt.Errorf("start %s: %w", m.Name, err)
	}
	m.cmd, m.cancel, m.done = cmd, cancel, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(m.done)
	}()
	return nil
}

// Kill sends SIGKILL to the member's process group and waits for it to exit.
func (m *Member) Kill() {
	if m.cmd == nil {
		return
	}
	m.cancel()
	<-m.done
}

// Alive reports whether the member's process is still running.
func (m *Member) Alive() bool {
	select {
	case <-m.done:
		return false
	default:
		return m.cmd != nil
	}
}

func (c *Cluster) stop() {
	for _, m := range c.Members {
		m.Kill()
	}
}

// waitHealthy polls every live member's /health endpoint until all answer
// healthy or the timeout passes. Polling is the only way to learn when an
// external process is ready.
func (c *Cluster) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		healthy := true
		for _, m := range c.Members {
			if !m.Alive() {
				if m.cmd != nil && m.cmd.ProcessState != nil && m.cmd.ProcessState.Exited() {
					return fmt.Errorf("member %s exited: %s", m.Name, tail(m.Log))
				}
				continue
			}
			if !m.healthy(ctx) {
				healthy = false
			}
		}
		if healthy {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not healthy: %w (m0 log: %s)", ctx.Err(), tail(c.Members[0].Log))
		case <-tick.C:
		}
	}
}

func (m *Member) healthy(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.ClientURL+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"health":"true"`)
}

// tail returns the end of a log file, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
