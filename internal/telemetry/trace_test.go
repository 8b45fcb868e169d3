package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/telemetry"
	"github.com/apiary-dev/apiary/internal/telemetry/telemetrytest"
)

const (
	runTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	tpA1     = "00-" + runTrace + "-00f067aa0ba902b7-01"
	tpB1     = "00-" + runTrace + "-1111111111111111-01"
	tpC1     = "00-" + runTrace + "-2222222222222222-01"
)

func newTracing(t *testing.T, c *telemetrytest.Collector) *telemetry.Tracing {
	t.Helper()
	tr, err := telemetry.NewTracing(t.Context(), telemetry.TraceOptions{Endpoint: c.URL(), ServiceName: "apiary-test"})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func byName(spans []telemetrytest.Span, name string, attr ...string) []telemetrytest.Span {
	var out []telemetrytest.Span
	for _, s := range spans {
		if s.Name != name {
			continue
		}
		ok := true
		for i := 0; i+1 < len(attr); i += 2 {
			if s.Attrs[attr[i]] != attr[i+1] {
				ok = false
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

func one(t *testing.T, spans []telemetrytest.Span, name string, attr ...string) telemetrytest.Span {
	t.Helper()
	got := byName(spans, name, attr...)
	if len(got) != 1 {
		t.Fatalf("%d spans %s %v, want 1 (all: %+v)", len(got), name, attr, spans)
	}
	return got[0]
}

// TestRunTrace feeds a run's events and checks the trace a collector
// receives over OTLP/HTTP: one trace with the run's id, the attempt spans
// taking their agents' span ids, integrations and gates under them.
func TestRunTrace(t *testing.T) {
	t.Parallel()
	c := telemetrytest.Start(t)
	tr := newTracing(t, c)
	rt := tr.Runs()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	zero, one1 := 0, 1
	for _, ev := range []telemetry.Event{
		{Kind: telemetry.EvRunStarted, Time: at(0), TraceID: runTrace},
		// a: integrated after a CAS retry, with two checks.
		{Kind: telemetry.EvAttemptStarted, Time: at(1), Task: "a", Attempt: 1, Role: "worker", Traceparent: tpA1, Base: "b0", Fence: 1},
		// b: its agent fails.
		{Kind: telemetry.EvAttemptStarted, Time: at(1), Task: "b", Attempt: 1, Role: "worker", Traceparent: tpB1, Fence: 2},
		{Kind: telemetry.EvAttemptFinished, Time: at(5), Task: "a", Attempt: 1, Role: "worker", Commit: "c1", Exit: &zero, InputTokens: 10, OutputTokens: 5, USD: 0.25},
		{Kind: telemetry.EvCASRetry, Time: at(6), Task: "a", Base: "b0", Commit: "h1"},
		{Kind: telemetry.EvIntegrated, Time: at(9), Task: "a", Commit: "m1", Integrated: "merge"},
		{Kind: telemetry.EvTaskDone, Time: at(9), Task: "a", Status: "succeeded", Checks: []telemetry.Check{
			{Command: "go vet ./...", Duration: time.Second}, {Command: "go test ./...", Duration: 2 * time.Second}}},
		{Kind: telemetry.EvAttemptFinished, Time: at(7), Task: "b", Attempt: 1, Role: "worker", Exit: &one1},
		{Kind: telemetry.EvTaskDone, Time: at(7), Task: "b", Status: "failed"},
		// c: rejected by a static gate.
		{Kind: telemetry.EvAttemptStarted, Time: at(8), Task: "c", Attempt: 1, Role: "worker", Traceparent: tpC1},
		{Kind: telemetry.EvAttemptFinished, Time: at(10), Task: "c", Attempt: 1, Role: "worker", Commit: "c3", Exit: &zero},
		{Kind: telemetry.EvGateRejected, Time: at(10), Task: "c", Gate: "forbidden", GateDetail: "deleted test"},
		{Kind: telemetry.EvTaskDone, Time: at(10), Task: "c", Status: "failed"},
		{Kind: telemetry.EvRunFinished, Time: at(11), Status: "failed"},
	} {
		ev.Run = "run-1"
		rt.Observe(ev)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := c.Spans()
	if errs := c.Errors(); len(errs) > 0 {
		t.Fatalf("collector rejected exports: %v", errs)
	}
	for _, s := range spans {
		if s.TraceID != runTrace {
			t.Errorf("span %s in trace %s, want the run's %s", s.Name, s.TraceID, runTrace)
		}
		if s.Service != "apiary-test" {
			t.Errorf("span %s of service %q", s.Name, s.Service)
		}
	}
	run := one(t, spans, telemetry.SpanRun)
	if run.Parent != "" || !run.Start.Equal(at(0)) || !run.End.Equal(at(11)) || !run.Error || run.Attrs["apiary.status"] != "failed" {
		t.Errorf("run span = %+v", run)
	}
	a := one(t, spans, telemetry.SpanAttempt, "apiary.task", "a")
	if a.SpanID != "00f067aa0ba902b7" || a.Parent != run.SpanID || !a.Start.Equal(at(1)) || !a.End.Equal(at(5)) || a.Error {
		t.Errorf("attempt a = %+v; want the agent's span id under the run", a)
	}
	if a.Attrs["apiary.tokens.input"] != "10" || a.Attrs["apiary.usd"] != "0.25" || a.Attrs["apiary.fence"] != "1" || a.Attrs["apiary.base"] != "b0" {
		t.Errorf("attempt a attributes = %v", a.Attrs)
	}
	ia := one(t, spans, telemetry.SpanIntegration, "apiary.task", "a")
	if ia.Parent != a.SpanID || !ia.Start.Equal(at(5)) || !ia.End.Equal(at(9)) || ia.Error ||
		ia.Attrs["apiary.outcome"] != "integrated" || ia.Attrs["apiary.integrated"] != "merge" {
		t.Errorf("integration a = %+v", ia)
	}
	if len(ia.Events) != 1 || ia.Events[0] != "cas_retry" {
		t.Errorf("integration a events = %v, want one cas_retry", ia.Events)
	}
	vet := one(t, spans, telemetry.SpanGate, "apiary.check.command", "go vet ./...")
	test := one(t, spans, telemetry.SpanGate, "apiary.check.command", "go test ./...")
	if vet.Parent != ia.SpanID || test.Parent != ia.SpanID || !vet.Start.Equal(at(6)) || !vet.End.Equal(at(7)) ||
		!test.Start.Equal(at(7)) || !test.End.Equal(at(9)) {
		t.Errorf("check gates not back to back ending at the verdict: vet %v-%v test %v-%v", vet.Start, vet.End, test.Start, test.End)
	}
	b := one(t, spans, telemetry.SpanAttempt, "apiary.task", "b")
	if b.SpanID != "1111111111111111" || !b.Error || len(byName(spans, telemetry.SpanIntegration, "apiary.task", "b")) != 0 {
		t.Errorf("failed attempt b = %+v (or it got an integration)", b)
	}
	cAtt := one(t, spans, telemetry.SpanAttempt, "apiary.task", "c")
	ic := one(t, spans, telemetry.SpanIntegration, "apiary.task", "c")
	g := one(t, spans, telemetry.SpanGate, "apiary.gate", "forbidden")
	if ic.Parent != cAtt.SpanID || !ic.Error || ic.Attrs["apiary.outcome"] != "rejected" || g.Parent != ic.SpanID || !g.Error || g.Attrs["apiary.gate.detail"] != "deleted test" {
		t.Errorf("rejection of c: integration %+v gate %+v", ic, g)
	}
	if len(spans) != 9 {
		t.Errorf("%d spans, want 9: %+v", len(spans), spans)
	}
}

// TestRunTraceInterrupted: spans still open when the tracer closes end as
// interrupted, and events of a run whose start was not seen still form a
// trace.
func TestRunTraceInterrupted(t *testing.T) {
	t.Parallel()
	c := telemetrytest.Start(t)
	tr := newTracing(t, c)
	rt := tr.Runs()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rt.Observe(telemetry.Event{Kind: telemetry.EvAttemptStarted, Run: "r", Time: t0, Task: "x", Attempt: 2, Traceparent: tpA1})
	rt.Close(t0.Add(time.Minute))
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := c.Spans()
	run := one(t, spans, telemetry.SpanRun)
	att := one(t, spans, telemetry.SpanAttempt)
	if run.TraceID != runTrace || run.Attrs["apiary.status"] != "interrupted" || att.Parent != run.SpanID || att.SpanID != "00f067aa0ba902b7" || !att.Error {
		t.Errorf("run %+v attempt %+v", run, att)
	}
}

// TestMiddleware: a request with a traceparent header becomes a server span
// in that trace, under the caller's span, and the handler sees it in its
// context; streaming still flushes through the wrapper.
func TestMiddleware(t *testing.T) {
	t.Parallel()
	c := telemetrytest.Start(t)
	tr := newTracing(t, c)
	inner := make(chan string, 1)
	h := tr.Middleware("gateway", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner <- telemetry.Traceparent(r.Context())
		w.WriteHeader(http.StatusTeapot)
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush through the middleware: %v", err)
		}
		_, _ = io.WriteString(w, "ok")
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/messages", strings.NewReader("{}"))
	req.Header.Set("traceparent", tpA1)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	seen := <-inner
	// The server span ends when the handler has returned, which may be
	// after the client read the answer: Close waits for that.
	srv.Close()
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := one(t, c.Spans(), "gateway POST")
	if s.TraceID != runTrace || s.Parent != "00f067aa0ba902b7" || s.Attrs["http.response.status_code"] != "418" || s.Attrs["url.path"] != "/v1/messages" {
		t.Errorf("server span = %+v", s)
	}
	if seen != "00-"+runTrace+"-"+s.SpanID+"-01" {
		t.Errorf("handler's context traceparent %q, want the server span's", seen)
	}
}

func TestStartSpan(t *testing.T) {
	t.Parallel()
	c := telemetrytest.Start(t)
	tr := newTracing(t, c)
	parent, ok := telemetry.ContextWithTraceparent(context.Background(), tpB1)
	if !ok {
		t.Fatal("traceparent refused")
	}
	ctx, end := tr.Start(parent, "worker", "apiary.worker", "w1")
	if telemetry.TraceIDOf(telemetry.Traceparent(ctx)) != runTrace {
		t.Errorf("child span left the trace: %s", telemetry.Traceparent(ctx))
	}
	end()
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := one(t, c.Spans(), "worker")
	if s.Parent != "1111111111111111" || s.Attrs["apiary.worker"] != "w1" {
		t.Errorf("span = %+v", s)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
}
