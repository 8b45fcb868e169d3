package gate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/proc"
)

// CheckCommand describes one check command run.
type CheckCommand struct {
	Command string        // run with sh -c
	Dir     string        // working directory: the candidate's scratch worktree
	Timeout time.Duration // 0: no timeout beyond ctx
	Log     string        // file receiving stdout and stderr (created, truncated)
	Env     []string      // environment; nil inherits the process's
	// Now is the clock for the reported duration; nil means time.Now.
	Now func() time.Time
}

// RunCheck runs one check command in a scope of its own (see package proc:
// the tracker ctx carries, so a run finds and ends a check's processes
// like its agents'), with stdout and stderr captured to c.Log. When ctx
// ends or the timeout passes, every process of the scope is killed; the
// result of a timeout says TimedOut with exit -1. Whatever the outcome,
// any process the command left behind is killed before RunCheck returns.
// An error is returned only when the command could not be run or ctx
// ended; a non-zero exit is a result, not an error.
func RunCheck(ctx context.Context, c CheckCommand) (envelope.CheckResult, error) {
	now := c.Now
	if now == nil {
		now = time.Now
	}
	res := envelope.CheckResult{Command: c.Command, Exit: -1, Log: c.Log}
	if err := os.MkdirAll(filepath.Dir(c.Log), 0o755); err != nil {
		return res, fmt.Errorf("gate: check log: %w", err)
	}
	logf, err := os.Create(c.Log)
	if err != nil {
		return res, fmt.Errorf("gate: check log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "$ %s\n", c.Command)

	runCtx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := exec.Command("/bin/sh", "-c", c.Command)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	cmd.Stdin = nil // /dev/null
	cmd.Stdout, cmd.Stderr = logf, logf
	start := now()
	err = runInScope(runCtx, cmd, strings.TrimSuffix(filepath.Base(c.Log), ".log"))
	res.Duration = now().Sub(start).Seconds()
	var se *scopeStartError
	if errors.As(err, &se) {
		return res, fmt.Errorf("gate: starting check %q: %w", c.Command, se.err)
	}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("gate: check %q: %w", c.Command, ctx.Err())
	case err == nil:
		res.Exit = 0
	case runCtx.Err() != nil:
		res.TimedOut = true
		fmt.Fprintf(logf, "\napiary: killed after the %v timeout\n", c.Timeout)
	case errors.As(err, &ee):
		res.Exit = ee.ExitCode()
	default:
		return res, fmt.Errorf("gate: check %q: %w", c.Command, err)
	}
	return res, nil
}

// failureLine matches a log line worth pointing at.
var failureLine = regexp.MustCompile(`(?i)\b(fail|failed|error|panic|assert)`)

// checkFailure turns a failed check result into a Failure pointing at the
// first line of its log that looks like a failure (else the last line).
func checkFailure(r envelope.CheckResult, timeout time.Duration) Failure {
	f := Failure{Gate: GateCheck, File: r.Log}
	first, last := 0, 0
	if fh, err := os.Open(r.Log); err == nil {
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			last = n
			if first == 0 && n > 1 && failureLine.Match(sc.Bytes()) {
				first = n
			}
		}
		fh.Close()
	}
	f.Line = first
	if f.Line == 0 {
		f.Line = last
	}
	if r.TimedOut {
		f.Detail = fmt.Sprintf("check %q timed out after %v", r.Command, timeout)
	} else {
		f.Detail = fmt.Sprintf("check %q exited %d after %.1fs", r.Command, r.Exit, r.Duration)
	}
	return f
}

// scopeStartError: the command could not be started.
type scopeStartError struct{ err error }

func (e *scopeStartError) Error() string { return e.err.Error() }

// runInScope starts cmd in a scope of ctx's tracker named leaf and waits for it;
// when ctx ends, every process of the scope is killed. After the command
// exits, whatever it left running is killed too. The error is cmd.Wait's,
// or a *scopeStartError.
func runInScope(ctx context.Context, cmd *exec.Cmd, leaf string) error {
	p, err := proc.FromContext(ctx).Start(cmd, leaf)
	if err != nil {
		return &scopeStartError{err}
	}
	exited := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
			_ = p.Kill()
		case <-exited:
		}
	}()
	err = cmd.Wait()
	close(exited)
	<-stopped
	p.Close(0) // stragglers left in the background
	return err
}
