package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func TestLoggerCarriesIDs(t *testing.T) {
	t.Parallel()
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	spanCtx, ok := ContextWithTraceparent(context.Background(), tp)
	if !ok {
		t.Fatal("valid traceparent refused")
	}
	for _, tc := range []struct {
		name string
		log  func(l *slog.Logger)
		want map[string]any
		not  []string
	}{
		{"context ids", func(l *slog.Logger) {
			ctx := WithIDs(WithIDs(context.Background(), IDs{Run: "r1"}), IDs{Task: "t1", Agent: "claude"})
			l.InfoContext(ctx, "hello")
		}, map[string]any{KeyRun: "r1", KeyTask: "t1", KeyAgent: "claude"}, []string{KeyTrace}},
		{"trace position", func(l *slog.Logger) {
			l.InfoContext(WithIDs(spanCtx, IDs{Run: "r2"}), "hello")
		}, map[string]any{KeyRun: "r2", KeyTrace: "0af7651916cd43dd8448eb211c80319c", KeySpan: "b7ad6b7169203331"}, []string{KeyTask}},
		{"explicit attribute wins", func(l *slog.Logger) {
			l.InfoContext(WithIDs(context.Background(), IDs{Task: "ctx-task"}), "hello", KeyTask, "own-task")
		}, map[string]any{KeyTask: "own-task"}, nil},
		{"logger attribute wins", func(l *slog.Logger) {
			l.With(KeyRun, "bound").InfoContext(WithIDs(context.Background(), IDs{Run: "ctx-run", Agent: "a"}), "hello")
		}, map[string]any{KeyRun: "bound", KeyAgent: "a"}, nil},
		{"no context", func(l *slog.Logger) { l.Info("hello") }, map[string]any{"msg": "hello"}, []string{KeyRun, KeyTask, KeyTrace}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			tc.log(NewLogger(&buf, LogOptions{JSON: true}))
			var rec map[string]any
			if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
				t.Fatalf("not one JSON record: %v\n%s", err, buf.String())
			}
			for k, v := range tc.want {
				if rec[k] != v {
					t.Errorf("%s = %v, want %v (record %s)", k, rec[k], v, buf.String())
				}
			}
			for _, k := range tc.not {
				if _, ok := rec[k]; ok {
					t.Errorf("unexpected %s in %s", k, buf.String())
				}
			}
			if n := strings.Count(buf.String(), `"`+KeyTask+`"`); n > 1 {
				t.Errorf("task_id appears %d times: %s", n, buf.String())
			}
		})
	}
}

func TestLoggerGroupAndLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := NewLogger(&buf, LogOptions{Level: slog.LevelWarn})
	ctx := WithIDs(context.Background(), IDs{Run: "r"})
	l.InfoContext(ctx, "dropped")
	l.WithGroup("g").WarnContext(ctx, "kept", "k", 1)
	out := buf.String()
	if strings.Contains(out, "dropped") {
		t.Errorf("info record written at level warn: %s", out)
	}
	if !strings.Contains(out, "g.k=1") || !strings.Contains(out, "g.run_id=r") {
		t.Errorf("grouped record lacks its attributes: %s", out)
	}
}

func metricValue(t *testing.T, m *Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			if matches(mt, labels) {
				switch {
				case mt.Counter != nil:
					return mt.GetCounter().GetValue()
				case mt.Gauge != nil:
					return mt.GetGauge().GetValue()
				case mt.Histogram != nil:
					return float64(mt.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return -1
}

func matches(m *dto.Metric, labels map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := labels[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(labels)
}

func TestMetricsObserve(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	zero := 0
	for _, ev := range []Event{
		{Kind: EvRunStarted, Run: "r", Time: t0},
		{Kind: EvAttemptStarted, Run: "r", Task: "a", Attempt: 1, Role: "worker", Time: t0},
		{Kind: EvAttemptStarted, Run: "r", Task: "b", Attempt: 1, Role: "worker", Time: t0},
		{Kind: EvAttemptFinished, Run: "r", Task: "a", Attempt: 1, Role: "worker", Time: t0.Add(10 * time.Second), Exit: &zero, InputTokens: 100, OutputTokens: 20, USD: 0.5},
		{Kind: EvGateRejected, Run: "r", Task: "a", Gate: "forbidden"},
		{Kind: EvIntegrated, Run: "r", Task: "a", Integrated: "merge"},
		{Kind: EvCASRetry, Run: "r", Task: "a"},
		{Kind: EvConflict, Run: "r", Task: "a"},
		{Kind: EvTaskDone, Run: "r", Task: "a", Status: "succeeded"},
		{Kind: EvChildRefused, Run: "r"},
		{Kind: EvRunFinished, Run: "r", Status: "failed"},
		{Kind: ""}, // ignored
	} {
		m.Observe(ev)
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"apiary_runtime_attempts_started_total", map[string]string{"role": "worker"}, 2},
		{"apiary_runtime_attempts_running", map[string]string{"role": "worker"}, 1},
		{"apiary_runtime_attempt_duration_seconds", map[string]string{"role": "worker"}, 1},
		{"apiary_runtime_tokens_total", map[string]string{"role": "worker", "direction": "input"}, 100},
		{"apiary_runtime_tokens_total", map[string]string{"role": "worker", "direction": "output"}, 20},
		{"apiary_runtime_usd_total", map[string]string{"role": "worker"}, 0.5},
		{"apiary_runtime_gate_rejections_total", map[string]string{"gate": "forbidden"}, 1},
		{"apiary_runtime_integrations_total", map[string]string{"kind": "merge"}, 1},
		{"apiary_runtime_cas_retries_total", nil, 1},
		{"apiary_runtime_conflicts_total", nil, 1},
		{"apiary_runtime_tasks_done_total", map[string]string{"status": "succeeded"}, 1},
		{"apiary_runtime_child_tasks_total", map[string]string{"outcome": "refused"}, 1},
		{"apiary_runtime_runs_finished_total", map[string]string{"status": "failed"}, 1},
		{"apiary_runtime_events_total", map[string]string{"kind": "attempt_started"}, 2},
	} {
		if got := metricValue(t, m, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	// The handler serves the same registry, Go runtime series included.
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{"apiary_runtime_attempts_started_total{role=\"worker\"} 2", "go_goroutines", "process_"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestTraceparentHelpers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, traceID string
	}{
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "0af7651916cd43dd8448eb211c80319c"},
		{" 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00 ", "0af7651916cd43dd8448eb211c80319c"},
		{"00-00000000000000000000000000000000-b7ad6b7169203331-01", ""}, // zero trace id
		{"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", ""}, // zero span id
		{"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", ""}, // forbidden version
		{"garbage", ""},
		{"", ""},
	} {
		if got := TraceIDOf(tc.in); got != tc.traceID {
			t.Errorf("TraceIDOf(%q) = %q, want %q", tc.in, got, tc.traceID)
		}
		ctx, ok := ContextWithTraceparent(context.Background(), tc.in)
		if ok != (tc.traceID != "") {
			t.Errorf("ContextWithTraceparent(%q) ok = %v", tc.in, ok)
		}
		if ok && TraceIDOf(Traceparent(ctx)) != tc.traceID {
			t.Errorf("Traceparent after ContextWithTraceparent(%q) = %q", tc.in, Traceparent(ctx))
		}
	}
}

func FuzzTraceparent(f *testing.F) {
	for _, s := range []string{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-x-y-z", "", "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ctx, ok := ContextWithTraceparent(context.Background(), s)
		id := TraceIDOf(s)
		if ok != (id != "") {
			t.Fatalf("%q: ContextWithTraceparent ok=%v but TraceIDOf=%q", s, ok, id)
		}
		if !ok {
			return
		}
		// What was accepted re-encodes to a traceparent of the same trace.
		out := Traceparent(ctx)
		if TraceIDOf(out) != id || len(out) != 55 {
			t.Fatalf("%q re-encoded as %q", s, out)
		}
	})
}

func TestTracingOff(t *testing.T) {
	t.Parallel()
	tr, err := NewTracing(t.Context(), TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled() {
		t.Fatal("tracing without an endpoint is on")
	}
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if got := tr.Middleware("x", h); got == nil || Traceparent(t.Context()) != "" {
		t.Fatal("middleware or context changed with tracing off")
	}
	ctx, end := tr.Start(t.Context(), "span", "k", "v")
	end()
	if Traceparent(ctx) != "" {
		t.Error("a span was recorded with tracing off")
	}
	rt := tr.Runs()
	rt.Observe(Event{Kind: EvRunStarted, Run: "r"})
	rt.Close(time.Now())
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Error(err)
	}
	var nilTracing *Tracing
	if nilTracing.Enabled() || nilTracing.Shutdown(t.Context()) != nil {
		t.Error("a nil Tracing is not off")
	}
}

func TestNewTracingBadEndpoint(t *testing.T) {
	t.Parallel()
	for _, ep := range []string{"127.0.0.1:4318", "ftp://host/x", "http://", "://bad"} {
		if _, err := NewTracing(t.Context(), TraceOptions{Endpoint: ep}); !errors.Is(err, ErrConfig) {
			t.Errorf("endpoint %q: err = %v, want ErrConfig", ep, err)
		}
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no randomness") }

func TestIDGeneratorSurvivesAFailingReader(t *testing.T) {
	t.Parallel()
	g := &idGen{rnd: failingReader{}}
	tid, sid := g.NewIDs(context.Background())
	if !tid.IsValid() || !sid.IsValid() {
		t.Fatalf("invalid ids %v %v", tid, sid)
	}
}
