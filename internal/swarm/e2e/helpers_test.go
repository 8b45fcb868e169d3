//go:build unix

// Package e2e_test runs swarm mode across processes: a real etcd cluster,
// the apiary binary (built once in TestMain) as the publishing run, the
// merge role and several `apiary worker` processes sharing a bare git
// remote. It lives apart from package swarm so that its minute of
// multi-process work runs in parallel with the package's own tests.
package e2e_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envtest"
)

// apiaryBin is the binary TestMain built; "" when the build failed.
var apiaryBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "apiary-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "apiary")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/apiary-dev/apiary/cmd/apiary")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building apiary: %v\n%s", err, out)
		return 1
	}
	apiaryBin = bin
	return m.Run()
}

// gitEnv gives every git a fixed identity and no user configuration.
var gitEnv = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=E2E", "GIT_AUTHOR_EMAIL=e2e@apiary.invalid",
	"GIT_COMMITTER_NAME=E2E", "GIT_COMMITTER_EMAIL=e2e@apiary.invalid"}

// git runs git in dir and returns its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// proc is one apiary process of a test, in its own process group; the
// test's cleanup kills the group, so nothing outlives the test.
type proc struct {
	name   string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	lines  chan string // stdout and stderr lines, for waiting on a message
	done   chan struct{}
	err    error
}

// syncWriter appends to a buffer under the process's lock.
type syncWriter struct {
	p *proc
	b *bytes.Buffer
}

func (w syncWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.b.Write(b)
}

// start runs the apiary binary with args in dir.
func start(t *testing.T, name, dir string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, lines: make(chan string, 256), done: make(chan struct{})}
	p.cmd = exec.Command(apiaryBin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), gitEnv...)
	p.cmd.SysProcAttr = envtest.ChildGroup()
	opr, opw := io.Pipe()
	epr, epw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = opw, epw
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var readers sync.WaitGroup
	for _, s := range []struct {
		r   *io.PipeReader
		buf *bytes.Buffer
	}{{opr, &p.stdout}, {epr, &p.stderr}} {
		readers.Go(func() {
			sc := bufio.NewScanner(s.r)
			sc.Buffer(make([]byte, 64<<10), 16<<20)
			for sc.Scan() {
				line := sc.Text()
				syncWriter{p, s.buf}.Write([]byte(line + "\n"))
				select {
				case p.lines <- line:
				default:
				}
			}
			io.Copy(io.Discard, s.r)
		})
	}
	go func() {
		err := p.cmd.Wait()
		opw.Close()
		epw.Close()
		readers.Wait()
		p.err = err
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", p.name, p.output(&p.stderr))
		}
	})
	return p
}

// kill sends SIGKILL to the process group and waits for the process.
func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

func (p *proc) output(b *bytes.Buffer) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return b.String()
}

// waitLine returns the first output line with prefix.
func (p *proc) waitLine(t *testing.T, prefix string, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case l := <-p.lines:
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-p.done:
			t.Fatalf("%s exited (%v) before printing %q:\n%s", p.name, p.err, prefix, p.output(&p.stderr))
		case <-deadline:
			t.Fatalf("%s printed no %q within %v", p.name, prefix, within)
		}
	}
}

// wait waits for the process to exit.
func (p *proc) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(within):
		t.Fatalf("%s still running after %v:\n%s", p.name, within, p.output(&p.stderr))
		return nil
	}
}
