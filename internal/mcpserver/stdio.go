package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// DrainTimeout bounds how long ServeStdio waits, after stdin closes, for
// requests already received to be answered.
const DrainTimeout = 30 * time.Second

// MaxLineBytes is the longest stdin line ServeStdio accepts (the SDK's
// default frame limit); a longer one is answered with -32600 and skipped.
const MaxLineBytes = mcp.DefaultMaxLineLength

// ServeStdio serves srv as newline-delimited JSON-RPC on in/out until in
// reaches EOF or ctx ends. Only MCP messages are written to out.
//
// It is its own transport rather than the SDK's, which ends the session on
// the first line it cannot decode. Here every line stands alone: one that is
// not JSON is answered with a -32700 parse error, one that is not a JSON-RPC
// 2.0 request, notification or response with -32600 (both with the
// request's id when it has a usable one, else null), an empty batch with one
// -32600, and the server keeps serving. A batch is answered as one array once
// all its requests are. A response the SDK would send with the non-standard
// code 0 gets the spec's code (-32602 for undecodable params, -32600 for a
// request not valid in the session's state, else -32603). A request the
// client cancelled with notifications/cancelled is not answered at all.
//
// At EOF it first lets every request already read finish and be answered (up
// to DrainTimeout), so a write in progress is never abandoned between its
// commit and its journal row, and "apiary mcp < requests" works.
func ServeStdio(ctx context.Context, srv *mcp.Server, in io.Reader, out io.Writer) error {
	t := &lineTransport{in: in, out: out}
	err := srv.Run(ctx, t)
	if errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// lineTransport is a one-shot mcp.Transport over a line stream.
type lineTransport struct {
	in  io.Reader
	out io.Writer
}

func (t *lineTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c := &lineConn{
		out:       t.out,
		incoming:  make(chan msgOrErr, 16),
		closed:    make(chan struct{}),
		changed:   make(chan struct{}, 1),
		pending:   map[jsonrpc.ID]bool{},
		cancelled: map[jsonrpc.ID]bool{},
		batches:   map[jsonrpc.ID]*batch{},
		tokens:    map[jsonrpc.ID]string{},
	}
	go c.readLoop(ctx, t.in)
	return c, nil
}

type msgOrErr struct {
	msg jsonrpc.Message
	err error
}

// lineConn is the connection: a reader goroutine that vets every line, and
// a writer that keeps the bookkeeping of what is owed an answer.
type lineConn struct {
	out      io.Writer
	wmu      sync.Mutex // one line at a time on out
	incoming chan msgOrErr
	closed   chan struct{}
	once     sync.Once
	changed  chan struct{} // pending shrank

	mu        sync.Mutex
	pending   map[jsonrpc.ID]bool   // requests read and not yet answered
	cancelled map[jsonrpc.ID]bool   // pending requests the client cancelled
	batches   map[jsonrpc.ID]*batch // requests that came in a batch
	tokens    map[jsonrpc.ID]string // tools/calls whose arguments were split here
}

// batch collects the answers to one batch line.
type batch struct {
	waiting int
	answers []json.RawMessage
}

func (c *lineConn) SessionID() string { return "" }

func (c *lineConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case m := <-c.incoming:
		return m.msg, m.err
	}
}

// deliver hands a message to the SDK.
func (c *lineConn) deliver(m msgOrErr) bool {
	select {
	case c.incoming <- m:
		return true
	case <-c.closed:
		return false
	}
}

// readLoop reads stdin line by line until EOF, then waits for the pending
// requests to be answered before reporting EOF.
func (c *lineConn) readLoop(ctx context.Context, in io.Reader) {
	br := bufio.NewReaderSize(in, 1<<20)
	for {
		line, tooLong, err := readLine(br, MaxLineBytes)
		if tooLong {
			c.writeError(nullID, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: line longer than %d bytes", MaxLineBytes))
		} else if len(line) > 0 && !c.handleLine(line) {
			return
		}
		if err != nil {
			c.drain(ctx)
			c.deliver(msgOrErr{err: err})
			return
		}
	}
}

// readLine returns the next line without its newline. A line longer than
// max is consumed and reported as tooLong.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		frag, ferr := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(frag) > max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if errors.Is(ferr, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			return nil, true, ferr
		}
		return bytes.TrimSuffix(line, []byte("\n")), false, ferr
	}
}

// drain waits, after EOF, until every request read has been answered (or
// cancelled), DrainTimeout passes or ctx ends.
func (c *lineConn) drain(ctx context.Context) {
	deadline := time.NewTimer(DrainTimeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.changed:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		}
	}
}

// handleLine vets one line and delivers what it holds; it reports false
// once the connection is closed.
func (c *lineConn) handleLine(line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return true
	}
	if line[0] == '[' {
		return c.handleBatch(line)
	}
	msg, bad := decodeLine(line)
	if bad != nil {
		c.writeRaw(bad.encode())
		return true
	}
	return c.accept(msg, nil)
}

// accept records a vetted message and delivers it.
func (c *lineConn) accept(m any, b *batch) bool {
	var msg jsonrpc.Message
	var members map[string]json.RawMessage
	switch m := m.(type) {
	case call:
		msg, members = m.Request, m.members
	case jsonrpc.Message:
		msg = m
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.mu.Lock()
		switch {
		case req.IsCall():
			// A reused id starts afresh: an earlier cancellation of it
			// must not swallow this answer.
			delete(c.cancelled, req.ID)
			c.pending[req.ID] = true
			if b != nil {
				c.batches[req.ID] = b
			}
			if members != nil {
				// The line was validated whole, so splitting the
				// arguments cannot fail; if re-encoding does, the SDK
				// gets the params as they came.
				if params, tok, err := predecodeCall(members); err == nil {
					req.Params = params
					if tok != "" {
						c.tokens[req.ID] = tok
					}
				} else if raw, err := json.Marshal(members); err == nil {
					req.Params = raw
				}
			}
		case req.Method == "notifications/cancelled":
			if id, ok := cancelledID(req.Params); ok && c.pending[id] {
				c.cancelled[id] = true
				delete(c.pending, id)
				if tok, ok := c.tokens[id]; ok {
					cancelCall(tok) // before the next line is read
				}
				c.signal()
			}
		}
		c.mu.Unlock()
	}
	return c.deliver(msgOrErr{msg: msg})
}

func (c *lineConn) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// handleBatch serves a JSON array of messages: invalid members are answered
// in the batch's reply, which is written once every request in it is.
func (c *lineConn) handleBatch(line []byte) bool {
	var raws []json.RawMessage
	if err := segjson.Unmarshal(line, &raws); err != nil {
		c.writeRaw(wireError{code: jsonrpc.CodeParseError, msg: "Parse error: " + err.Error()}.encode())
		return true
	}
	if len(raws) == 0 {
		c.writeError(nullID, jsonrpc.CodeInvalidRequest, "Invalid Request: empty batch")
		return true
	}
	b := &batch{}
	var msgs []any
	for _, raw := range raws {
		msg, bad := decodeLine(bytes.TrimSpace(raw))
		if bad != nil {
			b.answers = append(b.answers, bad.encode())
			continue
		}
		switch m := msg.(type) {
		case call:
			b.waiting++
		case *jsonrpc.Request:
			if m.IsCall() {
				b.waiting++
			}
		}
		msgs = append(msgs, msg)
	}
	if b.waiting == 0 && len(b.answers) > 0 {
		c.writeBatch(b.answers)
	}
	for _, m := range msgs {
		if !c.accept(m, b) {
			return false
		}
	}
	return true
}

func (c *lineConn) writeError(id jsonrpc.ID, code int64, msg string) {
	var raw json.RawMessage
	if id.IsValid() {
		raw, _ = json.Marshal(id.Raw())
	}
	c.writeRaw(wireError{id: raw, code: code, msg: msg}.encode())
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, isResp := msg.(*jsonrpc.Response)
	var b *batch
	if isResp && resp.ID.IsValid() {
		c.mu.Lock()
		dropped := c.cancelled[resp.ID]
		delete(c.cancelled, resp.ID)
		delete(c.pending, resp.ID)
		b = c.batches[resp.ID]
		delete(c.batches, resp.ID)
		if tok, ok := c.tokens[resp.ID]; ok {
			splitCalls.Delete(tok) // answered (perhaps without reaching the handler)
			delete(c.tokens, resp.ID)
		}
		if b != nil {
			b.waiting--
		}
		c.signal()
		c.mu.Unlock()
		if dropped {
			// The client cancelled it: it gets no answer.
			if b != nil {
				c.finishBatch(b, nil)
			}
			return nil
		}
	}
	var data []byte
	switch {
	case isResp && resp.Error == nil && resp.ID.IsValid() && len(resp.Result) > 0:
		// The SDK marshalled the result itself; splice it in rather than
		// have EncodeMessage scan and compact it again.
		id, err := json.Marshal(resp.ID.Raw())
		if err != nil {
			return err
		}
		data = make([]byte, 0, len(resp.Result)+len(id)+32)
		data = append(append(append(data, `{"jsonrpc":"2.0","id":`...), id...), `,"result":`...)
		data = append(append(data, resp.Result...), '}')
	default:
		if isResp && resp.Error != nil {
			msg = specCode(resp)
		}
		var err error
		if data, err = jsonrpc.EncodeMessage(msg); err != nil {
			return err
		}
	}
	if b != nil {
		c.finishBatch(b, data)
		return nil
	}
	return c.writeRaw(data)
}

// finishBatch adds an answer to a batch and writes the batch when complete.
func (c *lineConn) finishBatch(b *batch, answer []byte) {
	c.mu.Lock()
	if answer != nil {
		b.answers = append(b.answers, answer)
	}
	done := b.waiting == 0
	answers := b.answers
	c.mu.Unlock()
	if done && len(answers) > 0 {
		c.writeBatch(answers)
	}
}

func (c *lineConn) writeBatch(answers []json.RawMessage) {
	data, _ := json.Marshal(answers)
	c.writeRaw(data)
}

// writeRaw writes one message line.
func (c *lineConn) writeRaw(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	buf := make([]byte, 0, len(data)+1)
	buf = append(append(buf, data...), '\n')
	_, err := c.out.Write(buf)
	return err
}
