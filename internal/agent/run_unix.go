//go:build unix

package agent

import (
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

// Run writes the attempt's configuration, starts the agent and waits for
// it. When ctx ends, the process group gets SIGTERM and, after the grace
// period, SIGKILL. In every case, once the leader has exited, any process
// left in its group is killed, so no child of the agent (an MCP server, a
// test binary) outlives the attempt.
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
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = inv.Env
	cmd.Stdin = nil // /dev/null: an inherited open stdin hangs some CLIs
	rp := newReportParser(s.Profile.Kind)
	tw := &teeWriter{w: logf, line: rp.line}
	cmd.Stdout = tw
	cmd.Stderr = logf
	cmd.SysProcAttr = groupAttr()
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
	if len(tw.buf) > 0 {
		rp.line(tw.buf) // a last line without its newline
	}

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
