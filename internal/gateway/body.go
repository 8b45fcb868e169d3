package gateway

import (
	"errors"
	"io"
	"sync"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/sched"
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
	parser  *sse.Parser
	scratch []byte

	closeOnce sync.Once
}

func newMeteredBody(g *Gateway, c *call, rc io.ReadCloser) *meteredBody {
	b := &meteredBody{g: g, c: c, rc: rc, meter: llmapi.NewStreamMeter(c.info)}
	if c.strip {
		b.parser = &sse.Parser{}
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
		n, err := b.rc.Read(p)
		if n > 0 {
			b.meter.Feed(p[:n])
			if b.parser != nil {
				b.rewrite(p[:n])
				n = 0 // rewritten bytes are in pending
			}
		}
		if err != nil {
			b.finish(errors.Is(err, io.EOF))
		}
		if n > 0 {
			return n, nil
		}
	}
}

// rewrite re-emits the SSE events in chunk, dropping the usage-only chunk.
func (b *meteredBody) rewrite(chunk []byte) {
	_ = b.parser.Feed(chunk, func(ev sse.Event) {
		if llmapi.IsUsageOnlyChunk([]byte(ev.Data)) {
			return
		}
		b.scratch = b.scratch[:0]
		if ev.Type != "" {
			b.scratch = append(b.scratch, "event: "...)
			b.scratch = append(b.scratch, ev.Type...)
			b.scratch = append(b.scratch, '\n')
		}
		b.scratch = append(b.scratch, "data: "...)
		b.scratch = append(b.scratch, ev.Data...)
		b.scratch = append(b.scratch, '\n', '\n')
		b.pending = append(b.pending, b.scratch...)
	})
}

// finish records how the upstream body ended and queues a terminal error
// frame when a stream broke.
func (b *meteredBody) finish(cleanEOF bool) {
	if b.eof {
		return
	}
	b.eof = true
	res := b.meter.Finish(cleanEOF)
	b.result = &res
	b.outcome = "ok"
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
		err := b.rc.Close()
		_ = err
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
		now := g.now()
		if c.outcome == "" || c.outcome == "ok" {
			c.outcome = outcome
		}
		c.ticket.Release()
		if c.streaming {
			g.metrics.inflight.WithLabelValues(c.up.name).Dec()
		}
		if c.res != nil {
			c.res.Commit(now, sched.Cost{Requests: 1, Input: u.TotalInput(), Output: u.OutputTokens})
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
