package runview

import (
	"context"
	"net/http"
	"time"

	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
	"github.com/apiary-dev/apiary/internal/telemetry"
)

// TelemetryEvent converts a run event for metrics and traces; with files
// it also reads what a trace needs from the run's files under root (its
// trace id, a task's checks).
func TelemetryEvent(root string, ev runs.Event, files bool) telemetry.Event {
	te := telemetry.Event{Time: ev.Time, Run: ev.Run, Kind: ev.Kind, Task: ev.Task, Attempt: ev.Attempt, Role: ev.Role,
		Base: ev.Base, Commit: ev.Commit, Status: ev.Status, Reason: ev.Reason, Integrated: ev.Integrated, Exit: ev.Exit,
		Fence: ev.Fence, Traceparent: ev.Trace}
	if ev.Gate != nil {
		te.Gate, te.GateDetail = ev.Gate.Gate, ev.Gate.Detail
	}
	if ev.Usage != nil {
		te.InputTokens, te.OutputTokens, te.USD = ev.Usage.InputTokens, ev.Usage.OutputTokens, ev.Usage.USD
	}
	if !files {
		return te
	}
	switch ev.Kind {
	case rundir.EvRunStarted, rundir.EvRunResumed:
		if rec, err := rundir.Open(root, ev.Run).Record(); err == nil {
			te.TraceID = rec.TraceID
		}
	case rundir.EvTaskDone:
		if rc, err := rundir.Open(root, ev.Run).Task(ev.Task).Receipt(); err == nil && rc != nil {
			for _, c := range rc.Checks {
				te.Checks = append(te.Checks, telemetry.Check{Command: c.Command, Exit: c.Exit, Duration: time.Duration(c.Duration * float64(time.Second))})
			}
		}
	}
	return te
}

// Observer feeds a run's events to the runtime's metrics and, when tracing
// is enabled, to a trace per run, and tells a dashboard to refresh.
type Observer struct {
	root    string
	tracing *telemetry.Tracing
	metrics *telemetry.Metrics
	traces  *telemetry.RunTracer
	notify  func()
}

// NewObserver observes the runs of the repository at root; tracing may be
// nil (no traces).
func NewObserver(root string, tracing *telemetry.Tracing) *Observer {
	return &Observer{root: root, tracing: tracing, metrics: telemetry.NewMetrics(), traces: tracing.Runs()}
}

// Metrics serves the metrics (Prometheus text).
func (o *Observer) Metrics() http.Handler { return o.metrics.Handler() }

// Notify sets what is called after each event (a dashboard's refresh);
// it must be set before the first event.
func (o *Observer) Notify(f func()) { o.notify = f }

// Event observes one event (runs.Config.OnEvent).
func (o *Observer) Event(ev runs.Event) {
	te := TelemetryEvent(o.root, ev, o.tracing.Enabled())
	o.metrics.Observe(te)
	o.traces.Observe(te)
	if o.notify != nil {
		o.notify()
	}
}

// Close ends the open traces and exports them, waiting up to 10 seconds.
func (o *Observer) Close(ctx context.Context) error {
	o.traces.Close(time.Now())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return o.tracing.Shutdown(sctx)
}
