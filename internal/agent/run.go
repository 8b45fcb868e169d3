package agent

import (
	"bytes"
	"io"
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

// teeWriter copies output to the log and hands complete lines to line.
type teeWriter struct {
	w    io.Writer
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
