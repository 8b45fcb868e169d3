package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/sse"
)

// meteredBody is the final response's body on its way to the client. It
// feeds every byte to a StreamMeter, and:
//   - when the upstream breaks the stream (a read error, or a clean end
//     without the provider's terminal frame), it appends exactly one terminal
//     error frame in the client's protocol, so the client never mistakes a
//     truncated stream for a complete one;
//   - when include_usage was injected, it removes the usage-only chunk the
//     client did not ask for;
//   - on Close it settles the request: admission slot, rate reservation,
//     budgets, ledger row.
type meteredBody struct {
	g     *Gateway
	c     *call
	rc    io.ReadCloser
	meter *llmapi.StreamMeter

	pending []byte // bytes to hand out before reading more
	eof     bool   // upstream done (cleanly or not); only pending remains
	result  *llmapi.StreamResult
	outcome string

	// strip mode: events are parsed and re-emitted without the usage chunk.
	parser *sse.Parser

	// resume mode (Anthropic Messages streams, see resume.go): tracker
	// follows what the client received; after a cut, splice rewrites the
	// continuation read from rc; subs are the continuation calls.
	ctx     context.Context
	tracker *streamTracker
	splice  *splicer
	subs    []*call
	extra   llmapi.Usage // input billed by finished continuations
	// resuming delivers a continuation started by resume; cancelResume
	// abandons it.
	resuming     chan resumeResult
	cancelResume context.CancelFunc

	closeOnce sync.Once
}

func newMeteredBody(ctx context.Context, g *Gateway, c *call, rc io.ReadCloser) *meteredBody {
	b := &meteredBody{g: g, c: c, rc: rc, ctx: ctx, meter: llmapi.NewStreamMeter(c.info)}
	if c.strip {
		b.parser = &sse.Parser{}
	}
	if c.prov == llmapi.Anthropic && c.info.Endpoint == llmapi.EndpointMessages && c.info.Stream && c.status < 400 && !g.cfg.NoResume {
		b.tracker = newStreamTracker()
	}
	return b
}

func (b *meteredBody) Read(p []byte) (int, error) {
	for {
		if len(b.pending) > 0 {
			n := copy(p, b.pending)
			b.pending = b.pending[n:]
			return n, nil
		}
		if b.eof {
			return 0, io.EOF
		}
		if b.resuming != nil {
			b.awaitResume()
			continue
		}
		n, err := b.rc.Read(p)
		if n > 0 {
			switch {
			case b.splice != nil:
				// A continuation: what the client sees is the rewrite.
				start := len(b.pending)
				var serr error
				b.pending, serr = b.splice.feed(p[:n], b.pending)
				out := b.pending[start:]
				b.meter.Feed(out)
				b.tracker.feed(out)
				n = 0
				if serr != nil && err == nil {
					err = serr
				}
			case b.parser != nil:
				b.meter.Feed(p[:n])
				b.rewrite(p[:n])
				n = 0 // rewritten bytes are in pending
			default:
				b.meter.Feed(p[:n])
				if b.tracker != nil {
					b.tracker.feed(p[:n])
				}
			}
		}
		if err != nil {
			clean := errors.Is(err, io.EOF)
			if b.resume() {
				if n > 0 {
					return n, nil
				}
				continue
			}
			b.finish(clean)
		}
		if n > 0 {
			return n, nil
		}
	}
}

// rewrite re-emits the SSE events in chunk, dropping the usage-only chunk.
func (b *meteredBody) rewrite(chunk []byte) {
	_ = b.parser.Feed(chunk, func(ev sse.Event) {
		data := []byte(ev.Data)
		if llmapi.IsUsageOnlyChunk(data) {
			return
		}
		b.pending = sse.AppendEvent(b.pending, ev.Type, data)
	})
}

// resume starts continuing a stream the upstream broke, when it can (see
// resume.go); it reports whether reading goes on from a continuation. The
// continuation runs in the background: until it answers, Read keeps the
// client's connection alive with ping events, as the provider itself does.
func (b *meteredBody) resume() bool {
	t := b.tracker
	if t == nil || !t.resumable || !t.started || t.done || len(b.subs) >= maxResumes {
		return false
	}
	body, err := continuationBody(b.c.body, t.prefill())
	if err != nil {
		return false
	}
	// The broken attempt is over: free its slot and settle its rate
	// reservation with what it streamed (estimated).
	cur := b.c
	if n := len(b.subs); n > 0 {
		cur = b.subs[n-1]
	}
	b.g.release(cur, llmapi.Usage{InputTokens: b.c.info.InputEstimate, OutputTokens: int64(t.text.Len()+3) / 4, Estimated: true})
	ctx, cancel := context.WithCancel(b.ctx)
	ch := make(chan resumeResult, 1)
	b.resuming, b.cancelResume = ch, cancel
	go func() {
		resp, c2, err := b.g.continuation(ctx, b.c, body)
		ch <- resumeResult{resp, c2, err}
	}()
	return true
}

// resumeResult is the outcome of a continuation request.
type resumeResult struct {
	resp *http.Response
	sub  *call
	err  error
}

// appendPing appends Anthropic's keep-alive event to b.
func appendPing(b []byte) []byte { return sse.AppendEvent(b, "ping", []byte(`{"type": "ping"}`)) }

// awaitResume waits for the continuation, sending pings meanwhile. It
// returns when there is something to read (a ping, or the continuation's
// body) or the stream is over.
func (b *meteredBody) awaitResume() {
	tick := time.NewTimer(b.g.cfg.KeepAlive)
	defer tick.Stop()
	select {
	case r := <-b.resuming:
		b.resuming, b.cancelResume = nil, nil
		if r.err != nil {
			b.finish(false)
			return
		}
		if b.splice != nil {
			b.extra = addInput(b.extra, b.splice.input)
		}
		_ = b.rc.Close()
		b.rc = r.resp.Body
		b.subs = append(b.subs, r.sub)
		t := b.tracker
		b.splice = &splicer{open: t.open, next: t.next, preOut: int64(t.text.Len()+3) / 4}
		b.g.metrics.resumed.WithLabelValues(b.c.up.name).Inc()
	case <-tick.C:
		b.pending = appendPing(b.pending)
	case <-b.ctx.Done():
		b.cancelResume()
		r := <-b.resuming
		b.resuming, b.cancelResume = nil, nil
		if r.err == nil {
			r.resp.Body.Close()
			b.g.release(r.sub, llmapi.Usage{})
		}
		b.finish(false)
	}
}

// addInput adds u's input counts to acc.
func addInput(acc, u llmapi.Usage) llmapi.Usage {
	acc.InputTokens += u.InputTokens
	acc.CacheCreationInputTokens += u.CacheCreationInputTokens
	acc.CacheCreation5m += u.CacheCreation5m
	acc.CacheCreation1h += u.CacheCreation1h
	acc.CacheReadInputTokens += u.CacheReadInputTokens
	return acc
}

// finish records how the upstream body ended and queues a terminal error
// frame when a stream broke.
func (b *meteredBody) finish(cleanEOF bool) {
	if b.eof {
		return
	}
	b.eof = true
	res := b.meter.Finish(cleanEOF)
	if len(b.subs) > 0 {
		res.Usage = addInput(addInput(res.Usage, b.extra), b.splice.input)
	}
	b.result = &res
	b.outcome = "ok"
	if len(b.subs) > 0 {
		b.outcome = "resumed"
	}
	if b.c.status >= 400 {
		b.outcome = "upstream_error"
		return
	}
	switch res.Outcome {
	case llmapi.OutcomeErrored:
		b.outcome = "stream_error" // the provider's own terminal error frame passed through
	case llmapi.OutcomeTruncated:
		if !b.c.info.Stream {
			if !cleanEOF {
				b.outcome = "truncated"
			}
			return
		}
		b.outcome = "truncated"
		frame := llmapi.StreamErrorFrame(b.c.prov, b.c.info.Endpoint, llmapi.KindAPI,
			"apiary gateway: the upstream stream ended before its terminal event; the answer is incomplete")
		if len(frame) > 0 {
			b.pending = append(b.pending, frame...)
		}
		b.g.metrics.truncated.WithLabelValues(b.c.up.name).Inc()
	}
}

// Close settles the request. A client that goes away mid-stream closes the
// body early: what was metered so far is billed, completed by estimates.
func (b *meteredBody) Close() error {
	b.closeOnce.Do(func() {
		if !b.eof {
			res := b.meter.Finish(false)
			b.result = &res
			b.outcome = "client_cancelled"
			b.eof = true
		}
		if b.resuming != nil {
			b.cancelResume()
			if r := <-b.resuming; r.err == nil {
				r.resp.Body.Close()
				b.subs = append(b.subs, r.sub)
			}
			b.resuming = nil
		}
		_ = b.rc.Close()
		for _, sub := range b.subs {
			b.g.release(sub, llmapi.Usage{})
			b.c.attempts += sub.attempts
		}
		b.g.settle(b.c, b.result.Usage, b.outcome)
	})
	return nil
}

// settle releases what a call holds and records it, exactly once.
func (g *Gateway) settle(c *call, u llmapi.Usage, outcome string) {
	if c == nil {
		return
	}
	c.settleOnce.Do(func() {
		if c.outcome == "" || c.outcome == "ok" {
			c.outcome = outcome
		}
		c.ticket.Release()
		if c.streaming {
			g.metrics.inflight.WithLabelValues(c.up.name).Dec()
		}
		if c.res != nil {
			c.res.Cancel() // answered already; a no-op then
		}
		usd := g.cost(c.prov, c.info.Model, u)
		if c.holds != nil {
			c.holds.commit(usd, u.TotalInput()+u.OutputTokens)
		}
		if c.status < 400 && u.OutputTokens > 0 && !u.Estimated {
			c.up.observeOutput(u.OutputTokens)
		}
		g.record(c, u)
	})
}

// record writes the ledger row, metrics and the request log line.
func (g *Gateway) record(c *call, u llmapi.Usage) {
	now := g.now()
	upName := ""
	if c.up != nil {
		upName = c.up.name
	}
	agent, keyID := "anonymous", ""
	if c.id != nil {
		agent, keyID = c.id.agent, c.id.keyID
	}
	var usd int64
	if c.status > 0 && c.status < 400 || u.TotalInput()+u.OutputTokens > 0 {
		usd = g.cost(c.prov, c.info.Model, u)
	}
	g.metrics.observe(upName, agent, c, u, usd)
	if g.cfg.Ledger != nil {
		g.cfg.Ledger.Record(Row{
			Time: c.start, RequestID: c.reqID, Agent: agent, KeyID: keyID, Upstream: upName,
			Provider: c.prov.String(), Endpoint: c.info.Endpoint.String(), Model: c.info.Model, Stream: c.info.Stream,
			Status: c.status, Outcome: c.outcome, Attempts: c.attempts, QueueWait: c.queueWait, TTFB: c.ttfb,
			Duration: now.Sub(c.start), InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens, CacheReadTokens: u.CacheReadInputTokens,
			Estimated: u.Estimated, MicroUSD: usd, TraceID: c.traceID,
		})
	}
	g.log.Debug("request", "request_id", c.reqID, "agent", agent, "upstream", upName, "model", c.info.Model,
		"status", c.status, "outcome", c.outcome, "attempts", c.attempts, "queue_wait_ms", c.queueWait.Milliseconds(),
		"ttfb_ms", c.ttfb.Milliseconds(), "duration_ms", now.Sub(c.start).Milliseconds(),
		"tokens_in", u.TotalInput(), "tokens_out", u.OutputTokens, "usd_micro", usd)
}
