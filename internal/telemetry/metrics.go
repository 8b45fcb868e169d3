package telemetry

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is a Prometheus registry holding the Go runtime's and the
// process's collectors and apiary's runtime series (namespace
// apiary_runtime), counted from Events. It is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	runs          *prometheus.CounterVec
	attempts      *prometheus.CounterVec
	running       *prometheus.GaugeVec
	attemptTime   *prometheus.HistogramVec
	tasksDone     *prometheus.CounterVec
	gateRejects   *prometheus.CounterVec
	integrations  *prometheus.CounterVec
	conflicts     prometheus.Counter
	casRetries    prometheus.Counter
	children      *prometheus.CounterVec
	tokens        *prometheus.CounterVec
	usd           *prometheus.CounterVec
	eventsTotal   *prometheus.CounterVec
	mu            sync.Mutex
	attemptStarts map[attemptKey]time.Time
}

type attemptKey struct {
	run, task, role string
	attempt         int
}

// NewMetrics returns a registry with the Go and process collectors and the
// runtime's series registered.
func NewMetrics() *Metrics {
	ns := "apiary_runtime"
	m := &Metrics{reg: prometheus.NewRegistry(), attemptStarts: map[attemptKey]time.Time{}}
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "runs_finished_total", Help: "Runs that ended, by status."}, []string{"status"})
	m.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "attempts_started_total", Help: "Agent attempts started, by role."}, []string{"role"})
	m.running = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "attempts_running", Help: "Agent attempts running now, by role."}, []string{"role"})
	m.attemptTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "attempt_duration_seconds", Help: "Wall time of agent attempts, by role.",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600}}, []string{"role"})
	m.tasksDone = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tasks_done_total", Help: "Tasks that got a receipt, by status."}, []string{"status"})
	m.gateRejects = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "gate_rejections_total", Help: "Candidates a gate rejected, by gate."}, []string{"gate"})
	m.integrations = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "integrations_total", Help: "Candidates integrated, by kind (fast-forward, merge, reconciled)."}, []string{"kind"})
	m.conflicts = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "conflicts_total", Help: "Candidates that conflicted with the integration branch."})
	m.casRetries = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "cas_retries_total", Help: "Integrations recomputed because the integration ref moved."})
	m.children = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "child_tasks_total", Help: "Child envelopes, by outcome (added, refused)."}, []string{"outcome"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tokens_total", Help: "Model tokens of finished attempts, by role and direction."}, []string{"role", "direction"})
	m.usd = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "usd_total", Help: "Spend in USD of finished attempts, by role."}, []string{"role"})
	m.eventsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "events_total", Help: "Run events observed, by kind."}, []string{"kind"})
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.runs, m.attempts, m.running, m.attemptTime, m.tasksDone, m.gateRejects, m.integrations, m.conflicts,
		m.casRetries, m.children, m.tokens, m.usd, m.eventsTotal)
	return m
}

// Registry is the registry, for other series to join.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Observe counts one event.
func (m *Metrics) Observe(ev Event) {
	if ev.Kind == "" {
		return
	}
	m.eventsTotal.WithLabelValues(ev.Kind).Inc()
	role := ev.Role
	if role == "" {
		role = "worker"
	}
	key := attemptKey{run: ev.Run, task: ev.Task, role: role, attempt: ev.Attempt}
	switch ev.Kind {
	case EvRunFinished:
		m.runs.WithLabelValues(orUnknown(ev.Status)).Inc()
	case EvAttemptStarted:
		m.attempts.WithLabelValues(role).Inc()
		m.running.WithLabelValues(role).Inc()
		m.mu.Lock()
		m.attemptStarts[key] = ev.Time
		m.mu.Unlock()
	case EvAttemptFinished:
		m.mu.Lock()
		start, ok := m.attemptStarts[key]
		delete(m.attemptStarts, key)
		m.mu.Unlock()
		if ok {
			m.running.WithLabelValues(role).Dec()
			if d := ev.Time.Sub(start); d >= 0 {
				m.attemptTime.WithLabelValues(role).Observe(d.Seconds())
			}
		}
		if ev.InputTokens > 0 {
			m.tokens.WithLabelValues(role, "input").Add(float64(ev.InputTokens))
		}
		if ev.OutputTokens > 0 {
			m.tokens.WithLabelValues(role, "output").Add(float64(ev.OutputTokens))
		}
		if ev.USD > 0 {
			m.usd.WithLabelValues(role).Add(ev.USD)
		}
	case EvTaskDone:
		m.tasksDone.WithLabelValues(orUnknown(ev.Status)).Inc()
	case EvGateRejected:
		m.gateRejects.WithLabelValues(orUnknown(ev.Gate)).Inc()
	case EvIntegrated:
		m.integrations.WithLabelValues(orUnknown(ev.Integrated)).Inc()
	case EvConflict:
		m.conflicts.Inc()
	case EvCASRetry:
		m.casRetries.Inc()
	case EvChildAdded:
		m.children.WithLabelValues("added").Inc()
	case EvChildRefused:
		m.children.WithLabelValues("refused").Inc()
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
