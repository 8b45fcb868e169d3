package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
)

// Errors the gateway answers with itself.
type breakerError struct {
	upstream string
	retryAt  time.Time
}

func (e *breakerError) Error() string {
	return fmt.Sprintf("apiary gateway: circuit breaker for upstream %s is open", e.upstream)
}

type queueFullError struct{ upstream string }

func (e *queueFullError) Error() string {
	return fmt.Sprintf("apiary gateway: admission queue for upstream %s is full", e.upstream)
}

type upstreamError struct {
	upstream string
	attempts int
	err      error
}

func (e *upstreamError) Error() string {
	return fmt.Sprintf("apiary gateway: upstream %s failed after %d attempt(s): %v", e.upstream, e.attempts, e.err)
}

// public is the error as a client may see it: the cause without internal
// addresses.
func (e *upstreamError) public() string {
	return fmt.Sprintf("apiary gateway: upstream %s failed after %d attempt(s): %s", e.upstream, e.attempts, publicCause(e.err))
}

func (e *upstreamError) Unwrap() error { return e.err }

// errorHandler answers a request whose round trip failed.
func (g *Gateway) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	c := callFrom(r.Context())
	if errors.Is(context.Cause(r.Context()), ErrAborted) {
		g.answer(w, c.prov, c.info.Endpoint, http.StatusForbidden, llmapi.KindPermission, ErrAborted.Error(), 0, true)
		c.status = http.StatusForbidden
		g.settle(c, llmapi.Usage{}, "aborted")
		return
	}
	if r.Context().Err() != nil {
		g.settle(c, llmapi.Usage{}, "client_cancelled")
		return
	}
	var be *breakerError
	var qe *queueFullError
	var ue *upstreamError
	status, kind, retry := http.StatusBadGateway, llmapi.KindAPI, time.Duration(0)
	msg := "apiary gateway: upstream request failed"
	switch {
	case errors.As(err, &be):
		status, kind, retry = http.StatusServiceUnavailable, llmapi.KindOverloaded, max(time.Second, time.Until(be.retryAt))
	case errors.As(err, &qe):
		status, kind, retry = http.StatusServiceUnavailable, llmapi.KindOverloaded, time.Second
	case isTimeout(err):
		status, kind = http.StatusGatewayTimeout, llmapi.KindTimeout
	}
	switch {
	case be != nil || qe != nil:
		msg = err.Error()
	case errors.As(err, &ue):
		msg = ue.public()
	}
	// The full error, with addresses, is the operator's.
	g.log.Warn("upstream failed", "request_id", c.reqID, "upstream", c.up.name, "agent", c.id.agent, "status", status, "error", err.Error())
	if status == http.StatusServiceUnavailable && c.prov == llmapi.Anthropic {
		status = 529
	}
	if c.ka != nil {
		// The status line is out: the failure goes in the stream.
		c.ka.halt()
		_, _ = w.Write(llmapi.StreamErrorFrame(c.prov, c.info.Endpoint, kind, msg))
		c.status = status
		g.settle(c, llmapi.Usage{}, "upstream_error")
		return
	}
	g.answer(w, c.prov, c.info.Endpoint, status, kind, msg, retry, false)
	c.status = status
	g.settle(c, llmapi.Usage{}, "upstream_error")
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// answer writes an error in the provider's own shape. noRetry adds
// x-should-retry: false, which the official SDKs obey.
func (g *Gateway) answer(w http.ResponseWriter, p llmapi.Provider, e llmapi.Endpoint, status int, kind, msg string, retryAfter time.Duration, noRetry bool) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(max(1, int((retryAfter+time.Second-1)/time.Second))))
	}
	if noRetry {
		h.Set("X-Should-Retry", "false")
	}
	w.WriteHeader(status)
	_, _ = w.Write(llmapi.ErrorBody(p, status, kind, msg))
}
