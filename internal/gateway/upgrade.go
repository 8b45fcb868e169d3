package gateway

import (
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"

	"github.com/apiary-dev/apiary/internal/llmapi"
)

// isUpgrade reports a request to switch protocols (a WebSocket handshake,
// such as Codex's GET /v1/responses with Upgrade: websocket).
func isUpgrade(r *http.Request) bool {
	if r.Header.Get("Upgrade") == "" {
		return false
	}
	for _, v := range r.Header.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}

// serveUpgrade proxies a protocol upgrade to the upstream: the agent is
// identified (and a virtual key replaced by the real one) as for any
// request, and refused while one of its budgets is spent; then the
// connection is handed through both ways, by httputil.ReverseProxy, for as
// long as either side keeps it.
//
// A Responses WebSocket (Codex's GET /v1/responses) is metered: the
// server's frames are followed as they go by (see wsSession), and each
// response it streams leaves a ledger row of its own, as the HTTP call it
// stands for would (model, usage and cost from its terminal event, status
// 200), whose cost is charged to the agent's and the key's budgets when it
// ends. Messages are not paced, queued or retried, and a budget is not
// reserved ahead of a response (the client's messages are not read): a
// session whose responses spend a budget goes on, and the next request or
// upgrade of its key (or agent) is refused. So that frames stay readable, the
// client's Sec-WebSocket-Extensions offer is not passed on (permessage-
// deflate is not negotiated; a client must do without it, as RFC 7692
// allows). The session itself leaves one row more, status 101 and no
// usage: outcome "upgraded", or "upgraded_unmetered" when its responses
// could not be metered (another protocol, an extension the upstream
// insisted on, frames the reader could not follow).
func (g *Gateway) serveUpgrade(w http.ResponseWriter, r *http.Request, up *upstream, path string, prov llmapi.Provider, c *call) {
	ep := llmapi.EndpointOf(path)
	c.info.Endpoint = ep
	id, err := g.identify(r.Context(), r)
	if err != nil {
		g.answer(w, prov, ep, http.StatusUnauthorized, llmapi.KindAuthentication, "apiary gateway: "+err.Error(), 0, true)
		c.status, c.outcome = http.StatusUnauthorized, "rejected"
		g.record(c, llmapi.Usage{})
		return
	}
	c.id = id
	if id.vkey != nil {
		id.flight = g.flights.enter(id.keyID)
		defer g.flights.leave(id.flight) // after the session's last record
	}
	if id.vkey != nil && up.apiKey == "" {
		g.answer(w, prov, ep, http.StatusInternalServerError, llmapi.KindAPI, "apiary gateway: upstream "+up.name+" has no real API key configured, so virtual keys cannot be used with it", 0, false)
		c.status, c.outcome = http.StatusInternalServerError, "rejected"
		g.record(c, llmapi.Usage{})
		return
	}
	// Nothing is reserved for the session (its responses are charged as
	// they end), but a spent budget refuses it as it would a request.
	hs, err := g.budgets.reserve(id, 1, 1)
	if err != nil {
		g.answer(w, prov, ep, http.StatusPaymentRequired, llmapi.KindBilling, err.Error(), 0, true)
		c.status, c.outcome = http.StatusPaymentRequired, "budget_exhausted"
		g.record(c, llmapi.Usage{})
		return
	}
	hs.cancel()
	actx, done, err := g.authorize(r, id, up)
	if err != nil {
		g.answer(w, prov, ep, http.StatusForbidden, llmapi.KindPermission, "apiary gateway: "+err.Error(), 0, true)
		c.status, c.outcome = http.StatusForbidden, "capability_denied"
		g.record(c, llmapi.Usage{})
		return
	}
	defer done()
	c.status, c.outcome = http.StatusSwitchingProtocols, "upgraded"
	var sess *wsSession
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			out := pr.Out
			out.URL.Scheme, out.URL.Host = up.url.Scheme, up.url.Host
			out.URL.Path, out.URL.RawPath = up.url.Path+path, ""
			out.Host = up.url.Host
			out.Header.Del("X-Apiary-Agent")
			out.Header.Del("X-Apiary-Priority")
			// Compressed frames could not be metered.
			out.Header.Del("Sec-WebSocket-Extensions")
			id.substituteKey(out, up.apiKey)
		},
		Transport: g.cfg.Transport,
		ModifyResponse: func(resp *http.Response) error {
			c.status = resp.StatusCode
			if resp.StatusCode != http.StatusSwitchingProtocols {
				c.outcome = "upstream_error"
				return nil
			}
			rwc, ok := resp.Body.(io.ReadWriteCloser)
			var why string
			switch {
			case !ok:
				return nil // the proxy refuses it
			case ep != llmapi.EndpointResponses || !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket"):
				why = "not a Responses WebSocket"
			case resp.Header.Get("Sec-WebSocket-Extensions") != "":
				why = "the upstream negotiated extension " + strconv.Quote(resp.Header.Get("Sec-WebSocket-Extensions"))
			default:
				sess = newWSSession(g, c, rwc)
				resp.Body = sess
				return nil
			}
			c.outcome = "upgraded_unmetered"
			g.log.Warn("websocket session not metered", "request_id", c.reqID, "upstream", up.name, "agent", id.agent, "path", path, "reason", why)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			g.log.Warn("upgrade failed", "request_id", c.reqID, "upstream", up.name, "agent", id.agent, "error", err.Error())
			c.status, c.outcome = http.StatusBadGateway, "upstream_error"
			g.answer(w, prov, ep, http.StatusBadGateway, llmapi.KindAPI,
				"apiary gateway: upstream "+up.name+" refused the upgrade: "+publicCause(err), 0, false)
		},
	}
	rp.ServeHTTP(w, r.WithContext(actx))
	if sess != nil && !sess.end() && c.outcome == "upgraded" {
		c.outcome = "upgraded_unmetered"
	}
	g.record(c, llmapi.Usage{})
}
