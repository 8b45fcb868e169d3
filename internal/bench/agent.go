package bench

import (
	"io"
	"strings"
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
