// Package etcdproc runs a real etcd cluster as child processes: N members of
// an etcd server binary (Debian's etcd-server) on free loopback ports, with
// their data in a directory of their own. Start waits until every member
// answers healthy; Stop kills every member's process group by pid, waits for
// it and removes the data. On Linux the kernel also kills each member when
// the process that started it dies, so a crashed parent leaves no cluster
// behind. Tests use it through etcdtest; benchmarks directly.
//
// Capacity measures the cluster's own transaction rate with a load shaped
// like a board claim, and CheckPerf runs `etcdctl check perf` against it.
package etcdproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNotHealthy: a started cluster did not answer healthy in time (or a
// member exited); the error carries the end of a member's log.
var ErrNotHealthy = errors.New("etcdproc: cluster not healthy")

// Options configure Start. The zero value starts one member of "etcd" from
// PATH with etcd's own Raft timing, under the system's temporary directory.
type Options struct {
	// Bin is the etcd server executable; default "etcd" looked up on PATH.
	Bin string
	// Members is the cluster size; default 1.
	Members int
	// Dir is where the cluster's directory (data and logs of every member)
	// is made; default the system's temporary directory. Stop removes the
	// cluster's directory, not Dir.
	Dir string
	// Heartbeat and Election set Raft's heartbeat interval and election
	// timeout; zero keeps etcd's defaults (100 ms, 1 s). Tests shorten them
	// so that failover and lease expiry are quick.
	Heartbeat, Election time.Duration
	// Ready bounds the wait for every member to answer healthy; default 30 s.
	Ready time.Duration
	// Args are extra flags for every member (e.g. "--quota-backend-bytes=…").
	Args []string
}

// Member is one etcd process.
type Member struct {
	Name      string
	ClientURL string // http://127.0.0.1:PORT
	PeerURL   string
	Dir       string // its data directory
	Log       string // its log file (stdout and stderr)

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been reaped
	once sync.Once
}

// Cluster is a running etcd cluster.
type Cluster struct {
	Members []*Member
	Dir     string // the cluster's directory, removed by Stop

	stopOnce sync.Once
	stopErr  error
}

// Start launches the cluster and waits until every member reports healthy.
// The members outlive ctx (it bounds only the wait); Stop ends them. A
// reserved port can be taken by another process before etcd binds it, so a
// cluster that fails to come up is retried on new ports, twice.
func Start(ctx context.Context, opt Options) (*Cluster, error) {
	if opt.Members <= 0 {
		opt.Members = 1
	}
	if opt.Ready <= 0 {
		opt.Ready = 30 * time.Second
	}
	bin := opt.Bin
	if bin == "" {
		bin = "etcd"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("etcdproc: %w", err)
	}
	opt.Bin = path
	var lastErr error
	for range 3 {
		c, err := start(ctx, opt)
		if err == nil {
			return c, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func start(ctx context.Context, opt Options) (*Cluster, error) {
	root, err := os.MkdirTemp(opt.Dir, "etcd")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(2 * opt.Members)
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	c := &Cluster{Dir: root}
	var initial []string
	for i := range opt.Members {
		m := &Member{
			Name:      "m" + strconv.Itoa(i),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			Dir:       filepath.Join(root, "m"+strconv.Itoa(i)),
		}
		m.Log = m.Dir + ".log"
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	for _, m := range c.Members {
		if err := m.start(opt, strings.Join(initial, ","), filepath.Base(root)); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := c.waitHealthy(ctx, opt.Ready); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// freePorts reserves n loopback ports by binding and releasing them.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("etcdproc: reserving a port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func (m *Member) start(opt Options, initial, token string) error {
	logf, err := os.Create(m.Log)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{
		"--name", m.Name,
		"--data-dir", m.Dir,
		"--listen-client-urls", m.ClientURL,
		"--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL,
		"--initial-advertise-peer-urls", m.PeerURL,
		"--initial-cluster", initial,
		"--initial-cluster-token", token,
		"--initial-cluster-state", "new",
		"--logger", "zap",
		"--log-outputs", "stderr",
		"--log-level", "warn",
	}
	if opt.Heartbeat > 0 {
		args = append(args, "--heartbeat-interval", strconv.FormatInt(opt.Heartbeat.Milliseconds(), 10))
	}
	if opt.Election > 0 {
		args = append(args, "--election-timeout", strconv.FormatInt(opt.Election.Milliseconds(), 10))
	}
	// Not CommandContext: the member lives until Kill, whatever context
	// started it.
	cmd := exec.Command(opt.Bin, append(args, opt.Args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("etcdproc: starting %s: %w", m.Name, err)
	}
	m.cmd, m.done = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(m.done)
	}()
	return nil
}

// Pid returns the member's process id (also its process group's), 0 before
// it started.
func (m *Member) Pid() int {
	if m.cmd == nil || m.cmd.Process == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Kill sends SIGKILL to the member's process group and waits for the member
// to exit. Killing a dead member does nothing.
func (m *Member) Kill() {
	if m.cmd == nil {
		return
	}
	m.once.Do(func() { killGroup(m.cmd.Process) })
	<-m.done
}

// Alive reports whether the member's process is still running.
func (m *Member) Alive() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// Endpoints returns every member's client address as HOST:PORT.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, strings.TrimPrefix(m.ClientURL, "http://"))
	}
	return eps
}

// Stop kills every member, waits for them and removes the cluster's
// directory. It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		for _, m := range c.Members {
			m.Kill()
		}
		c.stopErr = os.RemoveAll(c.Dir)
	})
	return c.stopErr
}

// waitHealthy polls every live member's /health endpoint until all answer
// healthy: the only way to learn when another process is ready.
func (c *Cluster) waitHealthy(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		healthy := true
		for _, m := range c.Members {
			if !m.Alive() {
				return fmt.Errorf("%w: member %s exited: %s", ErrNotHealthy, m.Name, tail(m.Log))
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
			return fmt.Errorf("%w: %w (m0 log: %s)", ErrNotHealthy, ctx.Err(), tail(c.Members[0].Log))
		case <-tick.C:
		}
	}
}

// Healthy reports whether every member answers healthy now.
func (c *Cluster) Healthy(ctx context.Context) bool {
	for _, m := range c.Members {
		if !m.Alive() || !m.healthy(ctx) {
			return false
		}
	}
	return true
}

func (m *Member) healthy(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.ClientURL+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
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
