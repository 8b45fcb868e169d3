package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DrainTimeout bounds how long ServeStdio waits, after stdin closes, for
// requests already received to be answered.
const DrainTimeout = 30 * time.Second

// ServeStdio serves srv as newline-delimited JSON-RPC on in/out until in
// reaches EOF or ctx ends. Only MCP messages are written to out. At EOF it
// first lets every request already read finish and be answered (up to
// DrainTimeout), so a write in progress is never abandoned between its
// commit and its journal row, and "apiary mcp < requests" works.
func ServeStdio(ctx context.Context, srv *mcp.Server, in io.Reader, out io.Writer) error {
	p := &pending{ids: map[string]bool{}, changed: make(chan struct{}, 1)}
	r := &drainReader{r: in, p: p, ctx: ctx}
	w := &answerWriter{w: out, p: p}
	err := srv.Run(ctx, &mcp.IOTransport{Reader: r, Writer: w})
	if errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// pending tracks request ids read but not yet answered.
type pending struct {
	mu      sync.Mutex
	ids     map[string]bool
	changed chan struct{}
}

func (p *pending) set(id string, on bool) {
	p.mu.Lock()
	if on {
		p.ids[id] = true
	} else {
		delete(p.ids, id)
	}
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

func (p *pending) empty() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ids) == 0
}

// message is the part of a JSON-RPC message the drain logic needs.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// lines splits a byte stream into complete lines for fn.
type lines struct{ buf []byte }

func (l *lines) feed(b []byte, fn func(line []byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.buf = append(l.buf, b...)
			return
		}
		line := b[:i]
		if len(l.buf) > 0 {
			line = append(l.buf, line...)
		}
		fn(line)
		l.buf = l.buf[:0]
		b = b[i+1:]
	}
}

// drainReader passes stdin through, noting requests, and holds back EOF
// until they are answered.
type drainReader struct {
	r   io.Reader
	p   *pending
	ctx context.Context
	l   lines
}

func (d *drainReader) Read(b []byte) (int, error) {
	n, err := d.r.Read(b)
	d.l.feed(b[:n], func(line []byte) {
		var m message
		if json.Unmarshal(line, &m) != nil {
			return
		}
		switch {
		case m.Method == "notifications/cancelled" && len(m.Params.RequestID) > 0:
			d.p.set(string(m.Params.RequestID), false)
		case m.Method != "" && len(m.ID) > 0:
			d.p.set(string(m.ID), true)
		}
	})
	if errors.Is(err, io.EOF) && n == 0 {
		deadline := time.NewTimer(DrainTimeout)
		defer deadline.Stop()
		for !d.p.empty() {
			select {
			case <-d.p.changed:
			case <-deadline.C:
				return 0, io.EOF
			case <-d.ctx.Done():
				return 0, io.EOF
			}
		}
	}
	return n, err
}

// Close implements io.Closer for the transport; stdin is not ours to close.
func (d *drainReader) Close() error { return nil }

// answerWriter passes responses to stdout, marking their ids answered.
type answerWriter struct {
	w  io.Writer
	p  *pending
	mu sync.Mutex
	l  lines
}

func (a *answerWriter) Write(b []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, err := a.w.Write(b)
	a.l.feed(b[:n], func(line []byte) {
		var m message
		if json.Unmarshal(line, &m) == nil && m.Method == "" && len(m.ID) > 0 {
			a.p.set(string(m.ID), false)
		}
	})
	return n, err
}

// Close implements io.Closer; stdout is not ours to close.
func (a *answerWriter) Close() error { return nil }
