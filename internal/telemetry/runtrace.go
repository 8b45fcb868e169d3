package telemetry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Span names of a run's trace.
const (
	SpanRun         = "run"
	SpanAttempt     = "attempt"
	SpanIntegration = "integration"
	SpanGate        = "gate"
)

// RunTracer turns the events of runs into one trace per run:
//
//	run                      run_started … run_finished (trace id: the run's)
//	└─ attempt               attempt_started … attempt_finished, one per attempt
//	   └─ integration        attempt_finished with a candidate … its verdict
//	      └─ gate            a rejection (static gates or checks), or one
//	                         span per check command run on an integrated result
//
// An attempt span takes the span id of the traceparent its agent received,
// so whatever the agent (or the gateway, from its traceparent header)
// records nests under it. Spans carry the times the events carry; gate
// spans of check commands are laid back to back, ending at the verdict,
// from the checks' durations. Observe must be called in event order (the
// runtime delivers them so); a RunTracer is safe for concurrent use.
type RunTracer struct {
	t *Tracing

	mu   sync.Mutex
	runs map[string]*runSpans
}

type runSpans struct {
	ctx      context.Context // carries the run span
	span     trace.Span
	traceID  trace.TraceID
	attempts map[attemptKey]*openAttempt
	integ    map[string]*openInteg // by task: the integration under way
	last     map[string]*openInteg // by task: the last integration, ended
}

type openAttempt struct {
	start time.Time
	tp    string
	base  string
	fence uint64
}

type openInteg struct {
	ctx  context.Context // carries the integration span
	span trace.Span
	end  time.Time
}

// Runs returns a RunTracer. With tracing off it records nothing.
func (t *Tracing) Runs() *RunTracer {
	return &RunTracer{t: t, runs: map[string]*runSpans{}}
}

// Observe turns one event into spans. The TraceID of a run_started or
// run_resumed event names the run's trace (the trace its agents'
// traceparents are in); without one it is made up.
func (rt *RunTracer) Observe(ev Event) {
	if !rt.t.Enabled() || ev.Run == "" {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	switch ev.Kind {
	case EvRunStarted, EvRunResumed:
		rt.endRun(ev.Run, ev.Time, "superseded")
		rt.startRun(ev, ev.TraceID)
		return
	}
	rs := rt.runs[ev.Run]
	if rs == nil {
		// Events of a run whose start this process did not see (a resumed
		// run observed from its middle): open its span now.
		tid := ev.TraceID
		if tid == "" {
			tid = TraceIDOf(ev.Traceparent)
		}
		rs = rt.startRun(Event{Kind: EvRunResumed, Run: ev.Run, Time: ev.Time}, tid)
	}
	key := attemptKey{run: ev.Run, task: ev.Task, role: roleOf(ev.Role), attempt: ev.Attempt}
	switch ev.Kind {
	case EvRunFinished:
		rt.endRun(ev.Run, ev.Time, ev.Status)
	case EvAttemptStarted:
		rt.endInteg(rs, ev.Task, ev.Time, "superseded", nil)
		rs.attempts[key] = &openAttempt{start: ev.Time, tp: ev.Traceparent, base: ev.Base, fence: ev.Fence}
	case EvAttemptFinished:
		rt.finishAttempt(rs, key, ev)
	case EvGateRejected:
		parent := rs.ctx
		if in := rs.integ[ev.Task]; in != nil {
			parent = in.ctx
		}
		_, span := rt.t.tracer.Start(parent, SpanGate, trace.WithTimestamp(ev.Time), trace.WithAttributes(
			attribute.String("apiary.task", ev.Task), attribute.String("apiary.gate", ev.Gate), attribute.String("apiary.gate.detail", ev.GateDetail)))
		span.SetStatus(codes.Error, "rejected by the "+ev.Gate+" gate")
		span.End(trace.WithTimestamp(ev.Time))
		rt.endInteg(rs, ev.Task, ev.Time, "rejected", nil)
	case EvConflict:
		rt.endInteg(rs, ev.Task, ev.Time, "conflict", nil)
	case EvCASRetry:
		if in := rs.integ[ev.Task]; in != nil {
			in.span.AddEvent("cas_retry", trace.WithTimestamp(ev.Time), trace.WithAttributes(
				attribute.String("apiary.expected_head", ev.Base), attribute.String("apiary.found_head", ev.Commit)))
		}
	case EvIntegrated:
		rt.endInteg(rs, ev.Task, ev.Time, "integrated", []attribute.KeyValue{
			attribute.String("apiary.integrated", ev.Integrated), attribute.String("apiary.commit", ev.Commit)})
	case EvTaskDone:
		rt.endInteg(rs, ev.Task, ev.Time, ev.Status, nil)
		rt.checkSpans(rs, ev)
		rs.span.AddEvent("task_done", trace.WithTimestamp(ev.Time), trace.WithAttributes(
			attribute.String("apiary.task", ev.Task), attribute.String("apiary.status", ev.Status)))
	}
}

// Close ends every span still open, as interrupted, at now.
func (rt *RunTracer) Close(now time.Time) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for id := range rt.runs {
		rt.endRun(id, now, "interrupted")
	}
}

func roleOf(r string) string {
	if r == "" {
		return "worker"
	}
	return r
}

func (rt *RunTracer) startRun(ev Event, traceID string) *runSpans {
	var f forced
	if tid, err := trace.TraceIDFromHex(traceID); err == nil {
		f.trace = tid
	}
	ctx := withForced(context.Background(), f)
	ctx, span := rt.t.tracer.Start(ctx, SpanRun, trace.WithNewRoot(), trace.WithTimestamp(ev.Time),
		trace.WithAttributes(attribute.String("apiary.run", ev.Run), attribute.Bool("apiary.resumed", ev.Kind == EvRunResumed)))
	rs := &runSpans{ctx: withForced(ctx, forced{}), span: span, traceID: span.SpanContext().TraceID(),
		attempts: map[attemptKey]*openAttempt{}, integ: map[string]*openInteg{}, last: map[string]*openInteg{}}
	rt.runs[ev.Run] = rs
	return rs
}

func (rt *RunTracer) endRun(run string, at time.Time, status string) {
	rs := rt.runs[run]
	if rs == nil {
		return
	}
	for task := range rs.integ {
		rt.endInteg(rs, task, at, "interrupted", nil)
	}
	for key, a := range rs.attempts {
		rt.finishAttempt(rs, key, Event{Time: at, Run: run, Task: key.task, Attempt: key.attempt, Role: key.role,
			Reason: "interrupted", Traceparent: a.tp})
	}
	rs.span.SetAttributes(attribute.String("apiary.status", status))
	if status != "succeeded" {
		rs.span.SetStatus(codes.Error, "run "+status)
	}
	rs.span.End(trace.WithTimestamp(at))
	delete(rt.runs, run)
}

// finishAttempt records an attempt's span, from its start to ev, and opens
// its integration when it produced a candidate.
func (rt *RunTracer) finishAttempt(rs *runSpans, key attemptKey, ev Event) {
	a := rs.attempts[key]
	delete(rs.attempts, key)
	if a == nil {
		a = &openAttempt{start: ev.Time}
	}
	tp := ev.Traceparent
	if tp == "" {
		tp = a.tp
	}
	var f forced
	if sc, ok := parseTraceparent(tp); ok && sc.TraceID() == rs.traceID {
		f.span = sc.SpanID()
	}
	attrs := []attribute.KeyValue{attribute.String("apiary.task", key.task), attribute.Int("apiary.attempt", key.attempt),
		attribute.String("apiary.role", key.role), attribute.String("apiary.base", a.base), attribute.Int64("apiary.fence", int64(a.fence)),
		attribute.Int64("apiary.tokens.input", ev.InputTokens), attribute.Int64("apiary.tokens.output", ev.OutputTokens),
		attribute.Float64("apiary.usd", ev.USD)}
	if ev.Commit != "" {
		attrs = append(attrs, attribute.String("apiary.candidate", ev.Commit))
	}
	if ev.Exit != nil {
		attrs = append(attrs, attribute.Int("apiary.exit", *ev.Exit))
	}
	ctx, span := rt.t.tracer.Start(withForced(rs.ctx, f), SpanAttempt, trace.WithTimestamp(a.start), trace.WithAttributes(attrs...))
	switch {
	case ev.Reason != "":
		span.SetStatus(codes.Error, ev.Reason)
	case ev.Exit != nil && *ev.Exit != 0:
		span.SetStatus(codes.Error, fmt.Sprintf("the agent exited with status %d", *ev.Exit))
	}
	span.End(trace.WithTimestamp(ev.Time))
	if ev.Commit == "" || ev.Kind != EvAttemptFinished {
		return
	}
	ictx, ispan := rt.t.tracer.Start(withForced(ctx, forced{}), SpanIntegration, trace.WithTimestamp(ev.Time),
		trace.WithAttributes(attribute.String("apiary.task", key.task), attribute.Int("apiary.attempt", key.attempt),
			attribute.String("apiary.candidate", ev.Commit)))
	rs.integ[key.task] = &openInteg{ctx: ictx, span: ispan}
}

// endInteg ends task's integration under way, if any, with its outcome.
func (rt *RunTracer) endInteg(rs *runSpans, task string, at time.Time, outcome string, attrs []attribute.KeyValue) {
	in := rs.integ[task]
	if in == nil {
		return
	}
	delete(rs.integ, task)
	in.span.SetAttributes(append(attrs, attribute.String("apiary.outcome", outcome))...)
	if outcome != "integrated" && outcome != "succeeded" {
		in.span.SetStatus(codes.Error, outcome)
	}
	in.span.End(trace.WithTimestamp(at))
	in.end = at
	rs.last[task] = in
}

// checkSpans records the check commands of a finished task as gate spans
// under its last integration, back to back, ending when it ended.
func (rt *RunTracer) checkSpans(rs *runSpans, ev Event) {
	in := rs.last[ev.Task]
	if in == nil || len(ev.Checks) == 0 {
		return
	}
	var total time.Duration
	for _, c := range ev.Checks {
		total += max(c.Duration, 0)
	}
	start := in.end.Add(-total)
	for _, c := range ev.Checks {
		d := max(c.Duration, 0)
		_, span := rt.t.tracer.Start(in.ctx, SpanGate, trace.WithTimestamp(start), trace.WithAttributes(
			attribute.String("apiary.task", ev.Task), attribute.String("apiary.gate", "check"),
			attribute.String("apiary.check.command", c.Command), attribute.Int("apiary.check.exit", c.Exit)))
		if c.Exit != 0 {
			span.SetStatus(codes.Error, fmt.Sprintf("check exited with status %d", c.Exit))
		}
		start = start.Add(d)
		span.End(trace.WithTimestamp(start))
	}
}
