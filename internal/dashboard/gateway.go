package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// GatewayClient is a GatewaySource that reads a running gateway over HTTP:
// GET /_apiary/stats for each upstream's admission state and GET /metrics
// for its failures, retries and the tokens and dollars per agent. It is
// safe for concurrent use.
type GatewayClient struct {
	// URL is the gateway's base URL, e.g. http://127.0.0.1:7420.
	URL string
	// Client sends the requests; nil is a client with a 5 s timeout.
	Client *http.Client
}

var _ GatewaySource = (*GatewayClient)(nil)

// maxGatewayBody bounds what is read from the gateway's endpoints.
const maxGatewayBody = 8 << 20

// Gateway reads both endpoints and combines them.
func (g *GatewayClient) Gateway(ctx context.Context) (GatewaySnapshot, error) {
	if _, err := url.Parse(g.URL); err != nil || g.URL == "" {
		return GatewaySnapshot{}, fmt.Errorf("%w: gateway URL %q", ErrInvalid, g.URL)
	}
	stats, err := g.get(ctx, "/_apiary/stats")
	if err != nil {
		return GatewaySnapshot{}, err
	}
	metrics, err := g.get(ctx, "/metrics")
	if err != nil {
		return GatewaySnapshot{}, err
	}
	return decodeGateway(stats, metrics)
}

func (g *GatewayClient) get(ctx context.Context, path string) ([]byte, error) {
	c := g.Client
	if c == nil {
		c = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(g.URL, "/")+path, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: gateway URL %q: %v", ErrInvalid, g.URL, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("dashboard: gateway %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxGatewayBody))
	if err != nil {
		return nil, fmt.Errorf("dashboard: gateway %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("dashboard: gateway %s: %s", path, resp.Status)
	}
	return b, nil
}

// gatewayStats is the part of the gateway's /_apiary/stats the dashboard
// shows.
type gatewayStats struct {
	Upstreams []struct {
		Name             string         `json:"name"`
		URL              string         `json:"url"`
		InFlight         int            `json:"in_flight"`
		Queued           int            `json:"queued"`
		ConcurrencyLimit int            `json:"concurrency_limit"`
		Breaker          string         `json:"breaker"`
		RateLimits       []RateLimit    `json:"rate_limits"`
		Agents           map[string]int `json:"agents_in_flight"`
	} `json:"upstreams"`
	Budgets []Budget `json:"budgets"`
}

// refusal names the kind of a request the gateway answered itself, from
// its outcome and status ("" for a request that went upstream).
func refusal(outcome string, status int) string {
	switch outcome {
	case "budget_exhausted":
		return RefuseBudget
	case "capability_denied":
		return RefuseCapability
	case "no_route":
		return RefuseRoute
	case "rejected":
		switch status {
		case http.StatusUnauthorized:
			return RefuseKey
		case http.StatusInternalServerError:
			return RefuseConfig
		}
		return RefuseMalformed
	}
	return ""
}

// decodeGateway combines the stats JSON and the Prometheus text of a
// gateway into a snapshot (Time left zero).
func decodeGateway(stats, metrics []byte) (GatewaySnapshot, error) {
	var st gatewayStats
	if err := json.Unmarshal(stats, &st); err != nil {
		return GatewaySnapshot{}, fmt.Errorf("dashboard: gateway stats: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(metrics))
	if err != nil {
		return GatewaySnapshot{}, fmt.Errorf("dashboard: gateway metrics: %w", err)
	}
	snap := GatewaySnapshot{Upstreams: []Upstream{}, Agents: []AgentSpend{}, Budgets: []Budget{}}
	ups := map[string]*Upstream{}
	agents := map[string]*AgentSpend{}
	agent := func(name string) *AgentSpend {
		a := agents[name]
		if a == nil {
			a = &AgentSpend{Agent: name}
			agents[name] = a
		}
		return a
	}
	held := 0
	for _, u := range st.Upstreams {
		snap.Upstreams = append(snap.Upstreams, Upstream{Name: u.Name, URL: u.URL, InFlight: u.InFlight, Queued: u.Queued,
			ConcurrencyLimit: u.ConcurrencyLimit, Breaker: u.Breaker, RateLimits: u.RateLimits})
		held += u.InFlight + u.Queued
		for name, n := range u.Agents {
			agent(name).InFlight += n
		}
	}
	for i := range snap.Upstreams {
		ups[snap.Upstreams[i].Name] = &snap.Upstreams[i]
	}
	for _, b := range st.Budgets {
		if id, ok := strings.CutPrefix(b.Scope, "key "); ok {
			b.Key = id
		} else if name, ok := strings.CutPrefix(b.Scope, "agent "); ok {
			b.Agent = name
		}
		snap.Budgets = append(snap.Budgets, b)
	}
	each(fams, "apiary_gateway_client_requests_in_flight", func(_ map[string]string, v float64) {
		snap.ClientInFlight += int(v)
	})
	// What the gateway serves but neither holds a slot nor queues for one
	// waits on a rate window or a retry's backoff.
	snap.Waiting = max(snap.ClientInFlight-held, 0)
	each(fams, "apiary_gateway_upstream_failures_total", func(l map[string]string, v float64) {
		u := ups[l["upstream"]]
		if u == nil {
			return
		}
		code, _ := strconv.Atoi(l["status"])
		switch {
		case code == http.StatusTooManyRequests:
			u.Status429 += v
		case code >= 500 && code <= 599:
			u.Status5xx += v
		}
	})
	each(fams, "apiary_gateway_retries_total", func(l map[string]string, v float64) {
		if u := ups[l["upstream"]]; u != nil {
			u.Retries += v
		}
	})
	each(fams, "apiary_gateway_requests_total", func(l map[string]string, v float64) {
		u := ups[l["upstream"]]
		if u == nil {
			return
		}
		code, _ := strconv.Atoi(l["status"])
		if kind := refusal(l["outcome"], code); kind != "" {
			if u.Refusals == nil {
				u.Refusals = map[string]float64{}
			}
			u.Refusals[kind] += v
			return
		}
		u.Requests += v
	})
	each(fams, "apiary_gateway_tokens_total", func(l map[string]string, v float64) {
		switch l["direction"] {
		case "input":
			agent(l["agent"]).InputTokens += int64(v)
		case "output":
			agent(l["agent"]).OutputTokens += int64(v)
		}
	})
	each(fams, "apiary_gateway_usd_total", func(l map[string]string, v float64) {
		agent(l["agent"]).USD += v
	})
	for _, a := range agents {
		snap.Agents = append(snap.Agents, *a)
	}
	sort.Slice(snap.Agents, func(i, j int) bool {
		if snap.Agents[i].USD != snap.Agents[j].USD {
			return snap.Agents[i].USD > snap.Agents[j].USD
		}
		return snap.Agents[i].Agent < snap.Agents[j].Agent
	})
	return snap, nil
}

// each calls f with the labels and value of every sample of the counter or
// gauge family name; samples that are not finite numbers are skipped.
func each(fams map[string]*dto.MetricFamily, name string, f func(labels map[string]string, v float64)) {
	fam := fams[name]
	if fam == nil {
		return
	}
	for _, m := range fam.GetMetric() {
		l := make(map[string]string, len(m.GetLabel()))
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		var v float64
		switch {
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Untyped != nil:
			v = m.GetUntyped().GetValue()
		default:
			continue
		}
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			f(l, v)
		}
	}
}
