package gateway

import (
	"net/http"
	"net/http/httputil"
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
// request, then the connection is handed through both ways for as long as
// either side keeps it. Messages on it are not paced or metered; the
// session leaves one ledger row.
func (g *Gateway) serveUpgrade(w http.ResponseWriter, r *http.Request, up *upstream, path string, prov llmapi.Provider, c *call) {
	id, err := g.identify(r.Context(), r)
	if err != nil {
		g.answer(w, prov, llmapi.EndpointOf(path), http.StatusUnauthorized, llmapi.KindAuthentication, "apiary gateway: "+err.Error(), 0, true)
		c.status, c.outcome = http.StatusUnauthorized, "rejected"
		g.record(c, llmapi.Usage{})
		return
	}
	c.id = id
	if id.vkey != nil && up.apiKey == "" {
		g.answer(w, prov, llmapi.EndpointOf(path), http.StatusInternalServerError, llmapi.KindAPI, "apiary gateway: upstream "+up.name+" has no real API key configured, so virtual keys cannot be used with it", 0, false)
		c.status, c.outcome = http.StatusInternalServerError, "rejected"
		g.record(c, llmapi.Usage{})
		return
	}
	actx, done, err := g.authorize(r, id, up)
	if err != nil {
		g.answer(w, prov, llmapi.EndpointOf(path), http.StatusForbidden, llmapi.KindPermission, "apiary gateway: "+err.Error(), 0, true)
		c.status, c.outcome = http.StatusForbidden, "capability_denied"
		g.record(c, llmapi.Usage{})
		return
	}
	defer done()
	c.status, c.outcome = http.StatusSwitchingProtocols, "upgraded"
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			out := pr.Out
			out.URL.Scheme, out.URL.Host = up.url.Scheme, up.url.Host
			out.URL.Path, out.URL.RawPath = up.url.Path+path, ""
			out.Host = up.url.Host
			out.Header.Del("X-Apiary-Agent")
			out.Header.Del("X-Apiary-Priority")
			id.substituteKey(out, up.apiKey)
		},
		Transport: g.cfg.Transport,
		ModifyResponse: func(resp *http.Response) error {
			c.status = resp.StatusCode
			if resp.StatusCode != http.StatusSwitchingProtocols {
				c.outcome = "upstream_error"
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			g.log.Warn("upgrade failed", "request_id", c.reqID, "upstream", up.name, "agent", id.agent, "error", err.Error())
			c.status, c.outcome = http.StatusBadGateway, "upstream_error"
			g.answer(w, prov, llmapi.EndpointOf(path), http.StatusBadGateway, llmapi.KindAPI,
				"apiary gateway: upstream "+up.name+" refused the upgrade: "+publicCause(err), 0, false)
		},
	}
	rp.ServeHTTP(w, r.WithContext(actx))
	g.record(c, llmapi.Usage{})
}
