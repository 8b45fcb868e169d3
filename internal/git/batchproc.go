package git

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// batchProc is one long-lived git process that reads requests on stdin
// and answers on stdout (cat-file --batch, update-ref --stdin). It starts
// on first use, is restarted after any failure (kill), and ends with
// close. Callers hold mu around a request and its answer.
type batchProc struct {
	repo *Repo
	args []string
	buf  int // stdout buffer size (0: the default)

	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *bytes.Buffer
	stop   context.CancelFunc
	closed bool
}

// ready starts the process if none runs; mu is held. It refuses once
// closed.
func (p *batchProc) ready() error {
	if p.closed {
		return fmt.Errorf("git %s: closed", strings.Join(p.args, " "))
	}
	if p.cmd != nil {
		return nil
	}
	pctx, stop := context.WithCancel(context.Background())
	cmd := p.repo.command(pctx, p.args, nil)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		stop()
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stop()
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		stop()
		return fmt.Errorf("git %s: %w", strings.Join(p.args, " "), err)
	}
	out := bufio.NewReader(stdout)
	if p.buf > 0 {
		out = bufio.NewReaderSize(stdout, p.buf)
	}
	p.cmd, p.stdin, p.stdout, p.stderr, p.stop = cmd, stdin, out, &stderr, stop
	return nil
}

// kill ends the process; mu is held. The next request starts another.
func (p *batchProc) kill() {
	if p.cmd == nil {
		return
	}
	p.stop()
	_ = p.stdin.Close()
	_ = p.cmd.Wait()
	p.cmd = nil
}

// close ends the process for good.
func (p *batchProc) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kill()
	p.closed = true
}
