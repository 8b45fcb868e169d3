package bench

import (
	"io"
	"strings"
	"syscall"
	"time"
)

// benchMessage is the mock agents' 200-character user message.
var benchMessage = strings.Repeat("Please review this change and say what to do next. ", 4)[:200]

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// idleReader restarts t (which cancels the request) whenever bytes arrive:
// a read timeout, not a deadline on the whole answer.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.t.Reset(ir.d)
	}
	return n, err
}

// ProcessCPU is the CPU time this process has used so far.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
