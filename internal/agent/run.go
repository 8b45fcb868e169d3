package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Result is what one attempt did, as seen from outside the agent.
type Result struct {
	// Exit is the exit code; -1 when the process was ended by a signal.
	Exit int
	// Signal names the signal that ended the process, if any.
	Signal string
	// Cancelled is set when the attempt was stopped because ctx ended.
	Cancelled bool
	Wall      time.Duration
	// Report is the CLI's own final report, nil if it printed none (a crash,
	// a kill, or a kind that reports nothing).
	Report *Report
}

// DefaultGrace is the time between SIGTERM and SIGKILL when Spec.Grace is 0.
const DefaultGrace = 5 * time.Second

// Run starts the attempt and waits for it. When ctx ends, the process group
// gets SIGTERM and, after the grace period, SIGKILL. In every case, once the
// leader has exited, any process left in its group is killed, so no child of
// the agent (an MCP server, a test binary) outlives the attempt.
//
// Run returns an error only when the agent could not be started; a non-zero
// exit is reported in Result.
func Run(ctx context.Context, s Spec) (Result, error) {
	if s.Log == "" {
		return Result{}, fmt.Errorf("%w: no log file", ErrBadProfile)
	}
	argv, env, err := s.Command(os.Getenv("PATH"))
	if err != nil {
		return Result{}, err
	}
	if s.Home != "" {
		if err := os.MkdirAll(s.Home, 0o700); err != nil {
			return Result{}, fmt.Errorf("agent: home: %w", err)
		}
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
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = env
	cmd.Stdin = nil // /dev/null: an inherited open stdin hangs some CLIs
	rp := &reportParser{kind: s.Profile.Kind}
	cmd.Stdout = &teeWriter{w: logf, line: rp.line}
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		return signalGroup(cmd.Process.Pid, syscall.SIGTERM)
	}
	cmd.WaitDelay = grace

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("agent: start %s: %w", argv[0], err)
	}
	pgid := cmd.Process.Pid
	if s.Started != nil {
		s.Started(pgid)
	}
	// After the grace period Go kills only the leader; kill the whole group.
	stopKill := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-t.C:
				_ = signalGroup(pgid, syscall.SIGKILL)
			case <-stopKill:
			}
		case <-stopKill:
		}
	}()
	waitErr := cmd.Wait()
	close(stopKill)
	wg.Wait()
	// Sweep: anything still in the group (a daemonised MCP server, a stray
	// test binary) dies with the attempt.
	_ = signalGroup(pgid, syscall.SIGKILL)

	res := Result{Wall: time.Since(start), Report: rp.report(), Cancelled: ctx.Err() != nil}
	res.Exit = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = ws.Signal().String()
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !errors.Is(waitErr, exec.ErrWaitDelay) && ctx.Err() == nil {
		return res, fmt.Errorf("agent: wait: %w", waitErr)
	}
	return res, nil
}

// signalGroup signals every process in the group; a group that is already
// gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// teeWriter copies output to the log and hands complete lines to line.
type teeWriter struct {
	w    *os.File
	line func([]byte)
	buf  []byte
}

// maxLine bounds the bytes kept for one output line; longer lines are logged
// but not parsed.
const maxLine = 4 << 20

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
