//go:build unix

package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/apiary-dev/apiary/internal/atomicfile"
	"github.com/apiary-dev/apiary/internal/proc"
)

// Run writes the attempt's configuration, starts the agent and waits for
// it. The agent leads a scope of its own (see package proc; the tracker is
// the one ctx carries): a cgroup where the machine allows, else a process
// group, marked so that even a daemon that left the group is found. When
// ctx ends, every process of the scope gets SIGTERM and, after the grace
// period, SIGKILL. As soon as the agent itself has exited it is reaped,
// and whatever it left (an MCP server, a background child still holding
// its stdout, a test binary) gets SIGTERM and, if still there after the
// grace period, SIGKILL — so no child of the agent outlives the attempt,
// and one that exits on SIGTERM costs the attempt no wait.
//
// Run returns an error only when the agent could not be started; a non-zero
// exit is reported in Result.
func Run(ctx context.Context, s Spec) (Result, error) {
	if s.Log == "" {
		return Result{}, fmt.Errorf("%w: no log file", ErrBadProfile)
	}
	inv, err := s.Invocation(os.Getenv("PATH"))
	if err != nil {
		return Result{}, err
	}
	if s.Home != "" {
		if err := os.MkdirAll(s.Home, 0o700); err != nil {
			return Result{}, fmt.Errorf("agent: home: %w", err)
		}
	}
	if err := writeFiles(inv.Files); err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(filepath.Dir(s.Log), 0o755); err != nil {
		return Result{}, fmt.Errorf("agent: log dir: %w", err)
	}
	logf, err := os.OpenFile(s.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return Result{}, fmt.Errorf("agent: log: %w", err)
	}
	defer logf.Close()

	grace := s.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	argv := inv.Argv
	// Not exec.CommandContext: the whole scope is signalled on ctx's end,
	// not the leader alone. Stdout is a pipe of our own (an *os.File, so
	// Wait returns when the agent exits, not when the last process holding
	// the pipe does).
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = inv.Env
	cmd.Stdin = nil // /dev/null: an inherited open stdin hangs some CLIs
	outR, outW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("agent: stdout: %w", err)
	}
	rp := newReportParser(s.Profile.Kind)
	tw := &teeWriter{w: logf, line: rp.line}
	cmd.Stdout = outW
	cmd.Stderr = logf
	cmd.SysProcAttr = groupAttr()

	start := time.Now()
	p, err := proc.FromContext(ctx).Start(cmd, "agent")
	outW.Close()
	if err != nil {
		outR.Close()
		return Result{}, fmt.Errorf("agent: start %s: %w", argv[0], err)
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(tw, outR)
	}()
	pgid := p.Scope().Pgid
	if s.Started != nil {
		s.Started(pgid)
	}
	exited := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
			_ = p.Signal(syscall.SIGTERM)
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-t.C:
				_ = p.Kill()
			case <-exited:
			}
		case <-exited:
		}
	}()
	waitErr := cmd.Wait()
	close(exited)
	wg.Wait()
	// The agent is gone; what it left gets the grace period (none left
	// when ctx ended: those were told to stop already).
	left := grace
	if ctx.Err() != nil {
		left = 0
	}
	stragglers := p.Close(left)
	// Every writer of the pipe is gone unless one escaped the scope (a
	// process group scope whose daemon dropped the marker): do not wait
	// on it for long.
	select {
	case <-drained:
	case <-time.After(min(grace, time.Second)):
		outR.Close()
		<-drained
	}
	outR.Close()
	if len(tw.buf) > 0 {
		rp.line(tw.buf) // a last line without its newline
	}

	res := Result{Wall: time.Since(start), Report: rp.report(), Cancelled: ctx.Err() != nil, Stragglers: stragglers}
	res.Exit = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = ws.Signal().String()
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && ctx.Err() == nil {
		return res, fmt.Errorf("agent: wait: %w", waitErr)
	}
	return res, nil
}

// teeWriter copies output to the log and hands complete lines to line.
type teeWriter struct {
	w    io.Writer
	line func([]byte)
	buf  []byte
}

func (t *teeWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		t.line(t.buf[:i])
		t.buf = t.buf[i+1:]
	}
	if len(t.buf) > maxLine {
		t.buf = t.buf[:0]
	}
	return n, err
}

// writeFiles writes an invocation's configuration files, each replaced
// whole, so that a failed write never leaves a CLI half a configuration.
// They are written again before every start, so they are not synced.
func writeFiles(files []File) error {
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
			return fmt.Errorf("agent: config: %w", err)
		}
		if err := atomicfile.WriteUnsynced(f.Path, f.Data, 0o600); err != nil {
			return fmt.Errorf("agent: config: %w", err)
		}
	}
	return nil
}
