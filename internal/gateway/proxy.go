package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/sched"
)

// call is the state of one client request across its attempts.
type call struct {
	up      *upstream
	path    string
	prov    llmapi.Provider
	info    llmapi.RequestInfo
	id      *identity
	body    []byte
	holds   *holds
	strip   bool // include_usage was injected: remove the usage chunk
	start   time.Time
	reqID   string
	traceID string

	attempts  int
	limited   int // 429s in a row
	queueWait time.Duration
	ttfb      time.Duration
	status    int
	outcome   string

	// ticket and res are held while the final response streams; nil once
	// settled in the retry loop.
	ticket *sched.Ticket
	res    *sched.Grant

	streaming bool // the final response is on its way (counted in flight)
	// w is the client's writer, for keep-alive events while the request
	// waits (see keepAlive); ka is set once they began.
	w  *statusOnce
	ka *keepAlive
	// kaMu guards ka and kaClosed while a timer may start keep-alive
	// events during a wait; after the wait only the handler touches ka.
	kaMu     sync.Mutex
	kaClosed bool
	// outHeader is the request's header as sent upstream (for a
	// continuation of a broken stream); continued marks a continuation.
	outHeader  http.Header
	continued  bool
	settleOnce sync.Once
}

type callKey struct{}

func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// unknownModelPrice prices models missing from the price table, so a budget
// can never be bypassed by naming an unknown model: Opus-class list prices.
var unknownModelPrice = llmapi.Price{Input: 15_000_000, Output: 75_000_000}

func (g *Gateway) cost(prov llmapi.Provider, model string, u llmapi.Usage) int64 {
	if c, ok := g.prices.CostFor(prov, model, u); ok {
		return int64(c)
	}
	return int64(unknownModelPrice.Cost(u))
}

func (g *Gateway) serveProxy(w http.ResponseWriter, r *http.Request) {
	start := g.now()
	reqID := g.reqPrefix + "_" + strconv.FormatUint(g.reqSeq.Add(1), 36)
	w.Header().Set("X-Apiary-Request-Id", reqID)
	up, path, prov := g.route(r)
	if prov == 0 {
		prov = llmapi.OpenAICompatible
	}
	reject := func(status int, kind, msg, outcome string, id *identity) {
		g.answer(w, prov, llmapi.EndpointOf(path), status, kind, msg, 0, false)
		g.record(&call{up: up, path: path, prov: prov, id: id, start: start, reqID: reqID, status: status, outcome: outcome, traceID: traceID(r)}, llmapi.Usage{})
	}
	if up == nil {
		reject(http.StatusNotFound, llmapi.KindNotFound, fmt.Sprintf("apiary gateway: no upstream serves %s %s; configure one with --upstream NAME=URL or route with /NAME/...", r.Method, r.URL.Path), "no_route", nil)
		return
	}
	if isUpgrade(r) {
		g.serveUpgrade(w, r, up, path, prov, &call{up: up, path: path, prov: prov, start: start, reqID: reqID, traceID: traceID(r)})
		return
	}
	if r.ContentLength > g.cfg.MaxBody {
		reject(http.StatusRequestEntityTooLarge, llmapi.KindRequestTooLarge, fmt.Sprintf("apiary gateway: request body of %d bytes exceeds the limit of %d", r.ContentLength, g.cfg.MaxBody), "rejected", nil)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, g.cfg.MaxBody+1))
	if err != nil {
		reject(http.StatusBadRequest, llmapi.KindInvalidRequest, "apiary gateway: reading request body: "+err.Error(), "client_cancelled", nil)
		return
	}
	if int64(len(body)) > g.cfg.MaxBody {
		reject(http.StatusRequestEntityTooLarge, llmapi.KindRequestTooLarge, fmt.Sprintf("apiary gateway: request body exceeds the limit of %d bytes", g.cfg.MaxBody), "rejected", nil)
		return
	}
	info, err := llmapi.InspectRequest(prov, path, r.URL.Query(), body)
	if err != nil {
		reject(http.StatusBadRequest, llmapi.KindInvalidRequest, "apiary gateway: malformed request body: "+err.Error(), "rejected", nil)
		return
	}
	id, err := g.identify(r.Context(), r)
	if err != nil {
		reject(http.StatusUnauthorized, llmapi.KindAuthentication, "apiary gateway: "+err.Error(), "rejected", nil)
		return
	}
	if id.vkey != nil {
		id.flight = g.flights.enter(id.keyID)
		defer g.flights.leave(id.flight) // after every record below
	}
	if id.vkey != nil && up.apiKey == "" {
		reject(http.StatusInternalServerError, llmapi.KindAPI, fmt.Sprintf("apiary gateway: upstream %s has no real API key configured, so virtual keys cannot be used with it", up.name), "rejected", id)
		return
	}
	maxOut := info.MaxOutputTokens
	if maxOut <= 0 {
		maxOut = g.cfg.DefaultMaxTokens
	}
	// Reserve pessimistically: the input estimate is a guess, so pad it.
	inEst := info.InputEstimate*5/4 + 16
	usdEst := g.cost(prov, info.Model, llmapi.Usage{InputTokens: inEst, OutputTokens: maxOut})
	hs, err := g.budgets.reserve(id, usdEst, inEst+maxOut)
	if err != nil {
		g.answer(w, prov, info.Endpoint, http.StatusPaymentRequired, llmapi.KindBilling, err.Error(), 0, true)
		g.record(&call{up: up, path: path, prov: prov, info: info, id: id, start: start, reqID: reqID, status: http.StatusPaymentRequired, outcome: "budget_exhausted", traceID: traceID(r)}, llmapi.Usage{})
		return
	}
	actx, done, err := g.authorize(r, id, up)
	if err != nil {
		hs.cancel()
		g.answer(w, prov, info.Endpoint, http.StatusForbidden, llmapi.KindPermission, "apiary gateway: "+err.Error(), 0, true)
		g.record(&call{up: up, path: path, prov: prov, info: info, id: id, start: start, reqID: reqID, status: http.StatusForbidden, outcome: "capability_denied", traceID: traceID(r)}, llmapi.Usage{})
		return
	}
	defer done()
	c := &call{up: up, path: path, prov: prov, info: info, id: id, body: body, holds: hs, start: start, reqID: reqID, traceID: traceID(r), w: &statusOnce{ResponseWriter: w}}
	if !g.cfg.NoIncludeUsage && info.Endpoint == llmapi.EndpointChat && info.Stream && !info.IncludeUsage &&
		(prov == llmapi.OpenAI || prov == llmapi.Azure || prov == llmapi.OpenAICompatible) {
		if nb, err := llmapi.InjectIncludeUsage(body); err == nil {
			c.body, c.strip = nb, true
		}
	}
	g.metrics.inflightReqs.Inc()
	defer g.metrics.inflightReqs.Dec()
	r2 := r.WithContext(context.WithValue(actx, callKey{}, c))
	u := *r.URL
	u.Path, u.RawPath = path, ""
	r2.URL = &u
	r2.Body = io.NopCloser(bytes.NewReader(c.body))
	r2.ContentLength = int64(len(c.body))
	g.proxy.ServeHTTP(c.w, r2)
	// A response that never reached ModifyResponse (the client went away
	// while the proxy was writing headers) is settled here.
	g.settle(c, llmapi.Usage{Estimated: true}, "client_cancelled")
}

// rewrite points the outbound request at the upstream.
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	c := callFrom(pr.In.Context())
	out := pr.Out
	out.URL.Scheme = c.up.url.Scheme
	out.URL.Host = c.up.url.Host
	out.URL.Path = c.up.url.Path + c.path
	out.URL.RawPath = ""
	out.Host = c.up.url.Host
	// The gateway meters bodies, so it asks for them uncompressed.
	out.Header.Del("Accept-Encoding")
	out.Header.Del("X-Apiary-Agent")
	out.Header.Del("X-Apiary-Priority")
	c.id.substituteKey(out, c.up.apiKey)
	c.outHeader = out.Header.Clone()
}

// roundTrip sends one request with admission, pacing, the breaker and
// transparent retries. It returns the final response: a success with its
// admission ticket and rate reservation still held (settled when the body
// closes), or a failure to pass through (already settled).
func (g *Gateway) roundTrip(req *http.Request) (*http.Response, error) {
	c := callFrom(req.Context())
	ctx := req.Context()
	up := c.up
	// Keep-alive events stop before the answer is written (c.ka may be
	// set on the way).
	defer func() { c.ka.halt() }()
	var waited time.Duration // time spent in retry backoff
	// carry is the rate reservation of an attempt the upstream never
	// charged (a reset, an edge 502): its place in the window is still
	// ours, so the retry takes it instead of queueing behind newer
	// requests.
	var carry *sched.Grant
	defer func() {
		if carry != nil {
			carry.Cancel()
		}
	}()
	maxOut := c.info.MaxOutputTokens
	if maxOut <= 0 {
		maxOut = g.cfg.DefaultMaxTokens
	}
	for {
		c.attempts++
		qstart := g.now()
		// 1. Pace by the rate limits, holding no admission slot.
		var res *sched.Grant
		switch {
		case carry != nil:
			res, carry = carry, nil
		case !g.cfg.NoRateLimit:
			r, err := g.pace(ctx, c, sched.Cost{Requests: 1, Input: c.info.InputEstimate, Output: up.outputReservation(maxOut)},
				c.attempts > 1 || c.continued)
			if err != nil {
				return nil, err
			}
			res = r
		}
		// 2. The breaker: wait for it to half-open, or fail fast.
		var permit *sched.Permit
		if up.breaker != nil {
			p, err := up.breaker.Allow(g.now())
			if err != nil {
				if res != nil {
					res.Cancel()
				}
				var oe *sched.OpenError
				errors.As(err, &oe)
				if g.cfg.BreakerFailFast || oe == nil {
					return nil, &breakerError{upstream: up.name, retryAt: retryAtOf(oe)}
				}
				d := max(time.Until(oe.RetryAt), 10*time.Millisecond)
				if err := sched.Sleep(ctx, d); err != nil {
					return nil, err
				}
				c.queueWait += g.now().Sub(qstart)
				c.attempts-- // waiting for the breaker is not an attempt
				continue
			}
			permit = &p
		}
		// 3. Admission.
		var ticket *sched.Ticket
		if up.gate != nil {
			t, err := up.gate.Acquire(ctx, sched.Request{Agent: c.id.agent, Class: c.id.priority, Cost: float64(c.info.InputEstimate + maxOut)})
			if err != nil {
				if res != nil {
					res.Cancel()
				}
				if permit != nil {
					permit.Cancel()
				}
				if errors.Is(err, sched.ErrQueueFull) {
					return nil, &queueFullError{upstream: up.name}
				}
				return nil, err
			}
			ticket = t
		}
		c.queueWait += g.now().Sub(qstart)
		g.metrics.inflight.WithLabelValues(up.name).Inc()
		// 4. Send.
		attempt := req.WithContext(ctx)
		attempt.Body = io.NopCloser(bytes.NewReader(c.body))
		attempt.ContentLength = int64(len(c.body))
		attempt.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(c.body)), nil }
		sent := g.now()
		if res != nil {
			res.Sent(sent) // a carried retry's send replaces the first
		}
		sentWith := 0 // requests in flight as this one goes, its own included
		if up.gate != nil {
			sentWith = up.gate.InFlight()
		}
		resp, err := g.cfg.Transport.RoundTrip(attempt)
		if err == nil && resp.StatusCode < 400 && !c.info.Stream {
			// Buffer a JSON answer whole, so that a connection that breaks
			// mid-body is still retryable: nothing has reached the client.
			err = bufferBody(resp, 64<<20)
		}
		now := g.now()
		ttfb := now.Sub(sent)
		if err != nil {
			g.metrics.inflight.WithLabelValues(up.name).Dec()
			ticket.Release()
			if ctx.Err() != nil {
				cancelAll(res, permit, now)
				return nil, ctx.Err()
			}
			// No answer at all (a reset, a refused connection): assume the
			// request never reached the API's limiter; the retry keeps its
			// place. If it was counted after all, the server's next headers
			// say so.
			carry = res
			if permit != nil {
				permit.Record(now, false)
			}
			g.aimdRecord(up, now, sched.Congestion, 0)
			if d, ok := g.retryDelay(c, 0, waited); ok {
				g.metrics.retries.WithLabelValues(up.name, "connection").Inc()
				g.log.Info("retrying", "request_id", c.reqID, "upstream", up.name, "agent", c.id.agent, "attempt", c.attempts, "reason", "connection", "error", err.Error(), "delay_ms", d.Milliseconds())
				if err := sched.Sleep(ctx, d); err != nil {
					return nil, err
				}
				waited += d
				continue
			}
			return nil, &upstreamError{upstream: up.name, attempts: c.attempts, err: err}
		}
		rl := llmapi.ParseRateLimits(c.prov, resp.Header, now)
		if resp.StatusCode < 400 {
			if res != nil {
				res.Answer(now, observations(rl), true)
			}
			if permit != nil {
				permit.Record(now, true)
			}
			g.aimdRecord(up, now, sched.Success, ttfb)
			c.ticket, c.res, c.ttfb, c.status, c.streaming = ticket, res, ttfb, resp.StatusCode, true
			return resp, nil
		}
		// A failure: read its (small) body to classify it.
		errBody, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		g.metrics.inflight.WithLabelValues(up.name).Dec()
		ticket.Release()
		f := llmapi.Classify(c.prov, resp.StatusCode, resp.Header, errBody, now)
		// A refusal for capacity while other requests of ours were in
		// flight is a concurrency cap speaking (or an overload, which
		// fewer requests in flight relieve as well): the concurrency
		// limit drops below what was in flight, and the retry queues for
		// a slot instead of backing off blind. Alone in flight, it is the
		// upstream's overload: the breaker counts it and the retry backs
		// off. (Requests sent together reach the server in any order, so
		// in a burst the measure may be one or two short; the limit then
		// grows back, after AIMD's cooldown.)
		capRefused := f.Class == llmapi.ClassOverloaded && f.RetryAfter <= 0 && sentWith > 1 && up.aimd != nil
		if permit != nil {
			switch {
			case capRefused:
				permit.Cancel() // says nothing of the upstream's health
			case f.Class == llmapi.ClassServer || f.Class == llmapi.ClassOverloaded || f.Class == llmapi.ClassTimeout:
				permit.Record(now, false)
			default:
				permit.Record(now, true) // the upstream answered sensibly
			}
		}
		// A 429 is the rate limit, not load: the rate model holds the
		// retry, and concurrency is not cut for it.
		sig := sched.SignalOf(resp.StatusCode)
		if f.Class == llmapi.ClassSpendLimit {
			sig = sched.Neutral
		}
		// queued: the limit is now below what was in flight, so the gate
		// holds the retry until a slot frees.
		queued := false
		if capRefused {
			limit := up.aimd.Refused(now, sentWith)
			g.metrics.concLimit.WithLabelValues(up.name).Set(float64(limit))
			queued = limit < sentWith
		} else {
			g.aimdRecord(up, now, sig, ttfb)
		}
		figures := rl.Requests.Known || rl.Tokens.Known || rl.InputTokens.Known || rl.OutputTokens.Known
		rateLimited := f.Class == llmapi.ClassRateLimit && f.AccountWide
		if res != nil {
			switch {
			case (f.Class == llmapi.ClassServer || f.Class == llmapi.ClassTimeout) && figures:
				// The API itself failed after admitting the request (its
				// rate-limit headers say it answered): the attempt counted.
				res.Answer(now, observations(rl), true)
			case f.Class == llmapi.ClassServer || f.Class == llmapi.ClassTimeout || f.Class == llmapi.ClassOverloaded:
				// An edge failure (a load balancer's 502, a concurrency
				// cap's 529): not charged; the retry keeps its place.
				carry = res
			case rateLimited:
				// Refused by the rate limit: not charged, and its figures
				// (the window is full, and where it ends) hold the retry
				// in the queue until the model admits it.
				res.Answer(now, observations(rl), false)
			default:
				// Refused before any work (4xx): nothing was charged.
				res.Cancel()
			}
		}
		if rateLimited && !g.cfg.NoRateLimit && !figures {
			// A 429 that says nothing of which window is full: pause.
			pause := f.RetryAfter
			if pause <= 0 {
				pause = time.Second
			}
			up.pacer.PauseUntil(now.Add(pause))
		}
		g.metrics.upstreamStatus.WithLabelValues(up.name, strconv.Itoa(resp.StatusCode)).Inc()
		if rateLimited && f.Retryable && f.RetryAfter <= g.cfg.MaxRetryWait && c.attempts < g.cfg.MaxAttempts && !g.cfg.NoRateLimit &&
			waited+f.RetryAfter <= g.cfg.MaxRetryWait {
			// The pacer holds the retry until the window has room: no
			// blind sleep on top of it. Its wait counts against the
			// retry budget as the server asked for it. Should the pacer
			// let it go again at once into another 429, the backoff
			// applies from the second on, so figures it misreads cannot
			// make a storm.
			g.metrics.retries.WithLabelValues(up.name, f.Class.String()).Inc()
			g.log.Info("retrying", "request_id", c.reqID, "upstream", up.name, "agent", c.id.agent, "attempt", c.attempts, "reason", f.Class.String(), "status", resp.StatusCode)
			waited += f.RetryAfter
			c.limited++
			if c.limited > 1 {
				if d, ok := g.retryDelay(c, 0, waited); ok {
					if err := sched.Sleep(ctx, d); err != nil {
						return nil, err
					}
					waited += d
				}
			}
			continue
		}
		if queued && c.attempts < g.cfg.MaxAttempts {
			// The place in the window is carried; the gate, now smaller,
			// holds the retry until a slot frees.
			g.metrics.retries.WithLabelValues(up.name, "capacity").Inc()
			g.log.Info("retrying", "request_id", c.reqID, "upstream", up.name, "agent", c.id.agent, "attempt", c.attempts, "reason", "capacity", "status", resp.StatusCode, "in_flight", sentWith)
			continue
		}
		if f.Retryable && f.RetryAfter <= g.cfg.MaxRetryWait {
			if d, ok := g.retryDelay(c, f.RetryAfter, waited); ok {
				reason := f.Class.String()
				g.metrics.retries.WithLabelValues(up.name, reason).Inc()
				g.log.Info("retrying", "request_id", c.reqID, "upstream", up.name, "agent", c.id.agent, "attempt", c.attempts, "reason", reason, "status", resp.StatusCode, "delay_ms", d.Milliseconds())
				if err := sched.Sleep(ctx, d); err != nil {
					return nil, err
				}
				waited += d
				continue
			}
		}
		// Pass the failure through, with the headers clients need to back
		// off correctly.
		resp.Body = io.NopCloser(bytes.NewReader(errBody))
		resp.ContentLength = int64(len(errBody))
		resp.Header.Set("Content-Length", strconv.Itoa(len(errBody)))
		if !f.Retryable {
			resp.Header.Set("X-Should-Retry", "false")
		} else if resp.Header.Get("Retry-After") == "" {
			secs := max(1, int(f.RetryAfter.Round(time.Second)/time.Second))
			resp.Header.Set("Retry-After", strconv.Itoa(secs))
		}
		c.status = resp.StatusCode
		c.outcome = "upstream_error"
		if c.ka != nil {
			c.failInStream(resp, streamKind(resp.StatusCode), fmt.Sprintf("apiary gateway: upstream %s answered %d: %s", up.name, resp.StatusCode, bytes.TrimSpace(errBody[:min(len(errBody), 300)])))
		}
		return resp, nil
	}
}

// pace waits in the upstream's pacer until the request may go. A retry,
// or the continuation of a broken stream (prio), goes ahead of newer
// requests. A wait longer than the clients' expected patience is logged at
// warn (the client may give up first); a client that gives up while queued
// is logged at warn with its wait.
func (g *Gateway) pace(ctx context.Context, c *call, cost sched.Cost, prio bool) (*sched.Grant, error) {
	up := c.up
	if d := up.pacer.Projected(cost); d > g.cfg.ClientPatience {
		c.kaMu.Lock()
		kept := c.info.Stream && g.startKeepAlive(c)
		c.kaMu.Unlock()
		g.log.Warn("pacing beyond client patience", "request_id", c.reqID, "upstream", up.name, "agent", c.id.agent,
			"projected_wait_ms", d.Milliseconds(), "patience_ms", g.cfg.ClientPatience.Milliseconds(), "stream", c.info.Stream, "kept_alive", kept)
	}
	// A projection is a plan: a stream still queued after half the
	// clients' patience is kept alive whatever was projected.
	var late *time.Timer
	if c.info.Stream && c.ka == nil {
		c.kaMu.Lock()
		c.kaClosed = false
		c.kaMu.Unlock()
		late = time.AfterFunc(g.cfg.ClientPatience/2, func() {
			c.kaMu.Lock()
			defer c.kaMu.Unlock()
			if !c.kaClosed && g.startKeepAlive(c) {
				g.log.Warn("queued beyond half the client patience: keeping the stream alive", "request_id", c.reqID, "upstream", up.name, "agent", c.id.agent)
			}
		})
	}
	t0 := g.now()
	gr, err := up.pacer.Wait(ctx, sched.Ask{Agent: c.id.agent, Class: c.id.priority, Cost: cost, Retry: prio})
	if late != nil {
		late.Stop()
		c.kaMu.Lock()
		c.kaClosed = true // a late start can no longer race the writes that follow
		c.kaMu.Unlock()
	}
	if err != nil && ctx.Err() != nil {
		g.log.Warn("client gave up while queued", "request_id", c.reqID, "upstream", up.name, "agent", c.id.agent,
			"queue_wait_ms", g.now().Sub(t0).Milliseconds())
	}
	return gr, err
}

// retryDelay decides whether attempt c.attempts may be followed by another
// and how long to wait first. A backoff of our own choosing (no
// retry-after) never takes the retry past the time the client is expected
// to give up (nine tenths of ClientPatience after the request came): a
// retry the client is no longer there for is wasted.
func (g *Gateway) retryDelay(c *call, retryAfter, waited time.Duration) (time.Duration, bool) {
	if c.attempts >= g.cfg.MaxAttempts {
		return 0, false
	}
	// Next counts the retries already made: none before the first retry,
	// whose backoff bound is then the base.
	d, ok := c.up.backoff.Next(c.attempts-1, retryAfter, waited)
	if ok && retryAfter <= 0 && g.cfg.ClientPatience > 0 {
		left := c.start.Add(g.cfg.ClientPatience * 9 / 10).Sub(g.now())
		d = min(d, max(left, 0))
	}
	return d, ok
}

func (g *Gateway) aimdRecord(up *upstream, now time.Time, s sched.Signal, ttfb time.Duration) {
	if up.aimd == nil {
		return
	}
	limit := up.aimd.Record(now, s, ttfb)
	g.metrics.concLimit.WithLabelValues(up.name).Set(float64(limit))
}

func cancelAll(res *sched.Grant, permit *sched.Permit, now time.Time) {
	if res != nil {
		res.Cancel()
	}
	if permit != nil {
		permit.Cancel()
	}
}

// bufferBody reads a response body fully into memory, bounded by limit.
func bufferBody(resp *http.Response, limit int64) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return nil
}

func retryAtOf(oe *sched.OpenError) time.Time {
	if oe == nil {
		return time.Time{}
	}
	return oe.RetryAt
}

// modifyResponse wraps the final response's body so that it is metered as it
// streams and settled when it ends.
func (g *Gateway) modifyResponse(resp *http.Response) error {
	c := callFrom(resp.Request.Context())
	if c.strip {
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
	}
	resp.Body = newMeteredBody(resp.Request.Context(), g, c, resp.Body)
	return nil
}

// traceID extracts the trace id of a W3C traceparent header.
func traceID(r *http.Request) string {
	tp := r.Header.Get("Traceparent")
	if len(tp) >= 35 && tp[2] == '-' {
		return tp[3:35]
	}
	return ""
}
