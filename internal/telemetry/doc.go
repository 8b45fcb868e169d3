// Package telemetry is apiary's observability: structured logs that carry
// the run, task and agent they are about; a Prometheus registry with the
// runtime's metrics; and OpenTelemetry tracing — one trace per run, a span
// per task attempt, gate and integration — with W3C trace context carried
// into agents (the TRACEPARENT environment variable) and into HTTP services
// such as the gateway (the traceparent header).
//
// It is the only package that imports OpenTelemetry. Tracing is off (every
// call a cheap no-op) unless an OTLP/HTTP endpoint or an exporter is
// configured. Nothing here reads the environment or keeps package-level
// state: the command line builds a Logger, a Metrics and a Tracing and hands
// them to whoever needs them.
//
// The runtime reports what happens as Events (the command line converts the
// runtime's own events, which this package does not import). Metrics.Observe
// counts them; a RunTracer turns them into spans after the fact, with the
// timestamps the events carry, so a span's identity can be taken from what
// the runtime handed the agent: the attempt span's id is the span id of the
// traceparent the agent received, and the run's trace id is the run's.
package telemetry

import "errors"

// ErrConfig is wrapped by every configuration error; test with errors.Is.
var ErrConfig = errors.New("telemetry: invalid configuration")
