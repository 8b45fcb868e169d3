package gateway

import (
	"net/http"
	"strconv"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the gateway's Prometheus series, on a registry of its own.
type metrics struct {
	reg            *prometheus.Registry
	inflightReqs   prometheus.Gauge
	inflight       *prometheus.GaugeVec
	queued         *prometheus.GaugeVec
	concLimit      *prometheus.GaugeVec
	breakerState   *prometheus.GaugeVec
	retries        *prometheus.CounterVec
	requests       *prometheus.CounterVec
	upstreamStatus *prometheus.CounterVec
	truncated      *prometheus.CounterVec
	resumed        *prometheus.CounterVec
	tokens         *prometheus.CounterVec
	usd            *prometheus.CounterVec
	queueWait      *prometheus.HistogramVec
	ttfb           *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	ns := "apiary_gateway"
	m.inflightReqs = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "client_requests_in_flight", Help: "Client requests being served, including those queued."})
	m.inflight = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "upstream_in_flight", Help: "Requests holding an admission slot, per upstream."}, []string{"upstream"})
	m.queued = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "queue_depth", Help: "Requests waiting for admission, per upstream."}, []string{"upstream"})
	m.concLimit = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "concurrency_limit", Help: "Current admission limit (resized by AIMD), per upstream."}, []string{"upstream"})
	m.breakerState = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "breaker_state", Help: "Circuit breaker state: 0 closed, 1 open, 2 half-open."}, []string{"upstream"})
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "retries_total", Help: "Transparent retries by reason."}, []string{"upstream", "reason"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "requests_total", Help: "Client requests by final status and outcome."}, []string{"upstream", "status", "outcome"})
	m.upstreamStatus = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "upstream_failures_total", Help: "Failed upstream attempts by HTTP status (429, 5xx, ...)."}, []string{"upstream", "status"})
	m.truncated = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "truncated_streams_total", Help: "Streams the upstream broke after the first byte; each ended with a terminal error frame."}, []string{"upstream"})
	m.resumed = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "resumed_streams_total", Help: "Broken Anthropic streams continued with a prefill request."}, []string{"upstream"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tokens_total", Help: "Tokens by agent and direction."}, []string{"agent", "direction"})
	m.usd = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "usd_total", Help: "Spend in USD by agent."}, []string{"agent"})
	buckets := []float64{.0005, .001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 120}
	m.queueWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "queue_wait_seconds", Help: "Time a request waited for pacing, the breaker and admission.", Buckets: buckets}, []string{"upstream"})
	m.ttfb = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "ttfb_seconds", Help: "Upstream time to response headers of the final attempt.", Buckets: buckets}, []string{"upstream"})
	m.reg.MustRegister(m.inflightReqs, m.inflight, m.queued, m.concLimit, m.breakerState, m.retries, m.requests,
		m.upstreamStatus, m.truncated, m.resumed, m.tokens, m.usd, m.queueWait, m.ttfb)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

func (m *metrics) observe(upstream, agent string, c *call, u llmapi.Usage, usd int64) {
	m.requests.WithLabelValues(upstream, strconv.Itoa(c.status), c.outcome).Inc()
	if upstream != "" && c.attempts > 0 {
		m.queueWait.WithLabelValues(upstream).Observe(c.queueWait.Seconds())
		if c.ttfb > 0 {
			m.ttfb.WithLabelValues(upstream).Observe(c.ttfb.Seconds())
		}
	}
	if in := u.TotalInput(); in > 0 {
		m.tokens.WithLabelValues(agent, "input").Add(float64(in))
	}
	if u.OutputTokens > 0 {
		m.tokens.WithLabelValues(agent, "output").Add(float64(u.OutputTokens))
	}
	if usd > 0 {
		m.usd.WithLabelValues(agent).Add(float64(usd) / 1e6)
	}
}
