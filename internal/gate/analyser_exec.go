package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// maxStdout bounds the standard output an analyser's command may produce
// (go test -json of a large module stays far below it).
const maxStdout = 64 << 20

// toolRun is one command an analyser runs.
type toolRun struct {
	argv    []string
	dir     string
	env     []string      // nil inherits
	log     string        // receives stderr (and the command line); required
	timeout time.Duration // 0: none beyond ctx
}

// toolResult is how a command ended.
type toolResult struct {
	exit     int // -1 when killed
	timedOut bool
	stdout   []byte
}

// errStdoutLimit: the command wrote more than maxStdout.
var errStdoutLimit = errors.New("standard output over the limit")

// limitedBuffer keeps at most max bytes and records an overflow.
type limitedBuffer struct {
	buf      bytes.Buffer
	max      int
	overflow bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.buf.Len()+len(p) > l.max {
		l.overflow = true
		return len(p), nil
	}
	return l.buf.Write(p)
}

// runTool runs t in its own process group, stdout captured, stderr to the
// log; the group is killed when ctx ends or the timeout passes, and any
// process left in it is killed when the command exits. A non-zero exit is
// a result; the error is for a command that cannot start, ctx ending, or
// output over the limit.
func runTool(ctx context.Context, t toolRun) (toolResult, error) {
	res := toolResult{exit: -1}
	if err := os.MkdirAll(filepath.Dir(t.log), 0o755); err != nil {
		return res, fmt.Errorf("%w: log: %v", ErrAnalyser, err)
	}
	logf, err := os.OpenFile(t.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return res, fmt.Errorf("%w: log: %v", ErrAnalyser, err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "$ (cd %s && %s)\n", t.dir, strings.Join(t.argv, " "))
	runCtx := ctx
	if t.timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, t.timeout)
		defer cancel()
	}
	out := &limitedBuffer{max: maxStdout}
	cmd := exec.CommandContext(runCtx, t.argv[0], t.argv[1:]...)
	cmd.Dir, cmd.Env = t.dir, t.env
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = out, logf
	setProcessGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("%w: starting %s: %v", ErrAnalyser, t.argv[0], err)
	}
	err = cmd.Wait()
	killGroup(cmd)
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("%w: %s: %w", ErrAnalyser, t.argv[0], ctx.Err())
	case out.overflow:
		return res, fmt.Errorf("%w: %s: %w", ErrAnalyser, t.argv[0], errStdoutLimit)
	case err == nil:
		res.exit = 0
	case runCtx.Err() != nil:
		res.timedOut = true
		fmt.Fprintf(logf, "apiary: killed after the %v timeout\n", t.timeout)
	case errors.As(err, &ee):
		res.exit = ee.ExitCode()
	default:
		return res, fmt.Errorf("%w: %s: %v", ErrAnalyser, t.argv[0], err)
	}
	res.stdout = out.buf.Bytes()
	return res, nil
}

// tailOf returns the last n lines of s.
func tailOf(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// readTail returns the last n lines of the file at path ("" on error).
func readTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return ""
	}
	return tailOf(string(b), n)
}

// appendLog appends b to the log at path, best effort: the log is a
// diagnostic, and the caller reports the failure it explains.
func appendLog(path string, b []byte) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	f.Write(b)
	f.Close()
}
