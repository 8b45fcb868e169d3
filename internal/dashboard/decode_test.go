package dashboard

import (
	"encoding/json"
	"testing"
)

const statsSeed = `{"upstreams":[{"name":"anthropic","url":"http://127.0.0.1:1","in_flight":3,"queued":2,"concurrency_limit":8,"breaker":"open",
"rate_limits":[{"dim":"requests","limit":50,"available":12.5}],"output_estimate_tokens":900,"agents_in_flight":{"alice":2,"bob":1}},
{"name":"openai","url":"http://127.0.0.1:2","in_flight":0,"queued":0,"concurrency_limit":16,"breaker":"closed","rate_limits":null}],"budgets":[]}`

const metricsSeed = `# HELP apiary_gateway_upstream_failures_total Failed upstream attempts by HTTP status (429, 5xx, ...).
# TYPE apiary_gateway_upstream_failures_total counter
apiary_gateway_upstream_failures_total{status="429",upstream="anthropic"} 7
apiary_gateway_upstream_failures_total{status="529",upstream="anthropic"} 2
apiary_gateway_upstream_failures_total{status="500",upstream="anthropic"} 1
apiary_gateway_upstream_failures_total{status="400",upstream="anthropic"} 4
apiary_gateway_upstream_failures_total{status="503",upstream="ghost"} 9
# TYPE apiary_gateway_retries_total counter
apiary_gateway_retries_total{reason="rate_limited",upstream="anthropic"} 7
apiary_gateway_retries_total{reason="connection",upstream="openai"} 1
# TYPE apiary_gateway_requests_total counter
apiary_gateway_requests_total{outcome="ok",status="200",upstream="anthropic"} 40
apiary_gateway_requests_total{outcome="upstream_error",status="529",upstream="anthropic"} 1
# TYPE apiary_gateway_tokens_total counter
apiary_gateway_tokens_total{agent="alice",direction="input"} 1000
apiary_gateway_tokens_total{agent="alice",direction="output"} 250
apiary_gateway_tokens_total{agent="bob",direction="input"} 10
# TYPE apiary_gateway_usd_total counter
apiary_gateway_usd_total{agent="alice"} 0.75
apiary_gateway_usd_total{agent="bob"} NaN
`

func TestDecodeGateway(t *testing.T) {
	t.Parallel()
	snap, err := decodeGateway([]byte(statsSeed), []byte(metricsSeed))
	if err != nil {
		t.Fatal(err)
	}
	a := snap.Upstreams[0]
	if a.InFlight != 3 || a.Queued != 2 || a.ConcurrencyLimit != 8 || a.Breaker != "open" || a.Status429 != 7 || a.Status5xx != 3 ||
		a.Retries != 7 || a.Requests != 41 || len(a.RateLimits) != 1 {
		t.Errorf("anthropic = %+v", a)
	}
	if o := snap.Upstreams[1]; o.Retries != 1 || o.Status429+o.Status5xx != 0 {
		t.Errorf("openai = %+v", o)
	}
	if len(snap.Agents) != 2 || snap.Agents[0].Agent != "alice" || snap.Agents[0].InputTokens != 1000 || snap.Agents[0].OutputTokens != 250 ||
		snap.Agents[0].USD != 0.75 || snap.Agents[0].InFlight != 2 || snap.Agents[1].USD != 0 || snap.Agents[1].InFlight != 1 {
		t.Errorf("agents = %+v (NaN must be dropped, most expensive first)", snap.Agents)
	}
	for _, tc := range []struct{ stats, metrics string }{
		{"{", ""}, {statsSeed, "not metrics {"}, {`{"upstreams":"x"}`, ""},
	} {
		if _, err := decodeGateway([]byte(tc.stats), []byte(tc.metrics)); err == nil {
			t.Errorf("decodeGateway(%q, %q): no error", tc.stats, tc.metrics)
		}
	}
}

func FuzzDecodeGateway(f *testing.F) {
	f.Add([]byte(statsSeed), []byte(metricsSeed))
	f.Add([]byte(`{}`), []byte(``))
	f.Add([]byte(`{"upstreams":[{"name":"x"}]}`), []byte("apiary_gateway_usd_total{agent=\"a\"} +Inf\n"))
	f.Fuzz(func(t *testing.T, stats, metrics []byte) {
		snap, err := decodeGateway(stats, metrics)
		if err != nil {
			return
		}
		// Whatever decodes can be served.
		if _, err := json.Marshal(snap); err != nil {
			t.Fatalf("snapshot does not encode: %v", err)
		}
	})
}
