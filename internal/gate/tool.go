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

// maxStdout bounds the standard output a tool's command may produce (go
// test -json of a large module stays far below it).
const maxStdout = 64 << 20

// Tool is one command a gate or analyser runs on a tree (go test, go
// vet, a benchmark), with its standard output captured.
type Tool struct {
	Argv    []string
	Dir     string
	Env     []string      // nil inherits
	Log     string        // receives stderr (and the command line); required
	Timeout time.Duration // 0: none beyond ctx
}

// ToolResult is how a tool's command ended.
type ToolResult struct {
	Exit     int // -1 when killed
	TimedOut bool
	Stdout   []byte
}

// ErrTool wraps the infrastructure failures of RunTool.
var ErrTool = errors.New("tool failed")

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

// RunTool runs t in a scope of its own (the tracker ctx carries; see
// package proc), stdout captured, stderr to the log; the scope is killed
// when ctx ends or the timeout passes, and any process left in it is
// killed when the command exits. A non-zero exit is
// a result; the error is for a command that cannot start, ctx ending, or
// output over the limit.
func RunTool(ctx context.Context, t Tool) (ToolResult, error) {
	res := ToolResult{Exit: -1}
	if err := os.MkdirAll(filepath.Dir(t.Log), 0o755); err != nil {
		return res, fmt.Errorf("%w: log: %v", ErrTool, err)
	}
	logf, err := os.OpenFile(t.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return res, fmt.Errorf("%w: log: %v", ErrTool, err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "$ (cd %s && %s)\n", t.Dir, strings.Join(t.Argv, " "))
	runCtx := ctx
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	out := &limitedBuffer{max: maxStdout}
	// Stdout through a pipe of our own, copied here: Wait returns when the
	// command exits, whatever it left holding the pipe.
	pr, pw, err := os.Pipe()
	if err != nil {
		return res, fmt.Errorf("%w: %v", ErrTool, err)
	}
	cmd := exec.Command(t.Argv[0], t.Argv[1:]...)
	cmd.Dir, cmd.Env = t.Dir, t.Env
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = pw, logf
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, pr)
	}()
	err = runInScope(runCtx, cmd, "tool-"+filepath.Base(t.Argv[0]))
	pw.Close()
	select {
	case <-copied: // the scope is empty now: nothing holds the pipe
	case <-time.After(time.Second): // but a process that escaped it might
		pr.Close()
		<-copied
	}
	pr.Close()
	var se *scopeStartError
	if errors.As(err, &se) {
		return res, fmt.Errorf("%w: starting %s: %v", ErrTool, t.Argv[0], se.err)
	}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("%w: %s: %w", ErrTool, t.Argv[0], ctx.Err())
	case out.overflow:
		return res, fmt.Errorf("%w: %s: %w", ErrTool, t.Argv[0], errStdoutLimit)
	case err == nil:
		res.Exit = 0
	case runCtx.Err() != nil:
		res.TimedOut = true
		fmt.Fprintf(logf, "apiary: killed after the %v timeout\n", t.Timeout)
	case errors.As(err, &ee):
		res.Exit = ee.ExitCode()
	default:
		return res, fmt.Errorf("%w: %s: %v", ErrTool, t.Argv[0], err)
	}
	res.Stdout = out.buf.Bytes()
	return res, nil
}

// TailOf returns the last n lines of s.
func TailOf(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ReadTail returns the last n lines of the file at path ("" on error).
func ReadTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return ""
	}
	return TailOf(string(b), n)
}

// AppendLog appends b to the log at path, best effort: the log is a
// diagnostic, and the caller reports the failure it explains.
func AppendLog(path string, b []byte) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	f.Write(b)
	f.Close()
}
