package telemetry

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TraceOptions configure NewTracing. The zero value turns tracing off.
type TraceOptions struct {
	// Endpoint is the OTLP/HTTP collector: a base URL
	// ("http://127.0.0.1:4318", spans go to /v1/traces) or the full traces
	// URL. Empty turns tracing off.
	Endpoint string
	// Headers are sent with every export (an API key, say).
	Headers map[string]string
	// ServiceName is the service.name resource attribute; "" is "apiary".
	ServiceName string
	// Rand is the randomness of the ids the runtime did not choose; nil is
	// crypto/rand.Reader.
	Rand io.Reader
	// BatchTimeout bounds how long an ended span waits before it is
	// exported; 0 is the SDK's default (5 s). Shutdown exports the rest.
	BatchTimeout time.Duration
}

// Tracing is OpenTelemetry tracing for one process. The zero value and a
// Tracing built with no endpoint are off: every method is a no-op and
// Middleware returns its handler unchanged. A Tracing is safe for
// concurrent use; Shutdown exports what is pending and stops it.
type Tracing struct {
	tp     *sdktrace.TracerProvider // nil when off
	tracer trace.Tracer
}

// NewTracing sets up tracing as o says. Nothing is sent until spans end;
// a collector that is down costs failed exports, never a blocked caller.
func NewTracing(ctx context.Context, o TraceOptions) (*Tracing, error) {
	if o.Endpoint == "" {
		return &Tracing{tracer: noop.NewTracerProvider().Tracer("apiary")}, nil
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: OTLP endpoint %q: want http(s)://HOST:PORT[/PATH]", ErrConfig, o.Endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u.String())}
	if len(o.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(o.Headers))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: OTLP exporter: %w", ErrConfig, err)
	}
	name := o.ServiceName
	if name == "" {
		name = "apiary"
	}
	rnd := o.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	var bopts []sdktrace.BatchSpanProcessorOption
	if o.BatchTimeout > 0 {
		bopts = append(bopts, sdktrace.WithBatchTimeout(o.BatchTimeout))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, bopts...),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", name))),
		sdktrace.WithIDGenerator(&idGen{rnd: rnd}),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
	)
	return &Tracing{tp: tp, tracer: tp.Tracer("github.com/apiary-dev/apiary")}, nil
}

// Enabled reports whether spans are recorded and exported.
func (t *Tracing) Enabled() bool { return t != nil && t.tp != nil }

// Shutdown exports every ended span and stops the exporter; later spans
// are dropped. It is safe to call on a Tracing that is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Flush exports every ended span now.
func (t *Tracing) Flush(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

// Start starts a span named name as a child of the span in ctx (or of a
// traceparent continued with ContextWithTraceparent); kv are attribute
// key, value pairs. It returns the span's context and the function that
// ends it.
func (t *Tracing) Start(ctx context.Context, name string, kv ...string) (context.Context, func()) {
	if !t.Enabled() {
		return ctx, func() {}
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithAttributes(pairs(kv)...))
	return ctx, func() { span.End() }
}

func pairs(kv []string) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, attribute.String(kv[i], kv[i+1]))
	}
	return out
}

var w3c = propagation.TraceContext{}

// Traceparent returns the W3C traceparent of the span in ctx, "" if none:
// what an agent started under that span gets as TRACEPARENT.
func Traceparent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"]
}

// ContextWithTraceparent returns ctx continuing the trace of a W3C
// traceparent (from the TRACEPARENT environment variable, say): spans
// started in it are its children. An invalid traceparent leaves ctx as is
// and reports false.
func ContextWithTraceparent(ctx context.Context, tp string) (context.Context, bool) {
	sc, ok := parseTraceparent(tp)
	if !ok {
		return ctx, false
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc), true
}

// TraceIDOf returns the trace id of a W3C traceparent, "" if it is not
// one.
func TraceIDOf(tp string) string {
	sc, ok := parseTraceparent(tp)
	if !ok {
		return ""
	}
	return sc.TraceID().String()
}

func parseTraceparent(tp string) (trace.SpanContext, bool) {
	ctx := w3c.Extract(context.Background(), propagation.MapCarrier{"traceparent": strings.TrimSpace(tp)})
	sc := trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}

// Middleware returns h wrapped so that each request becomes a server span
// named "name METHOD", continuing the trace of the request's traceparent
// header when it has one; the handler's request context carries the span,
// so a proxy's outgoing requests can carry it on. With tracing off it
// returns h.
func (t *Tracing) Middleware(name string, h http.Handler) http.Handler {
	if !t.Enabled() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := w3c.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := t.tracer.Start(ctx, name+" "+r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

// statusWriter records the status; Unwrap keeps http.ResponseController
// (flushing a stream) working through it.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// forced carries the ids the next span must take (zero: generate).
type forced struct {
	trace trace.TraceID
	span  trace.SpanID
}

type forcedKey struct{}

func withForced(ctx context.Context, f forced) context.Context {
	return context.WithValue(ctx, forcedKey{}, f)
}

// idGen generates span and trace ids, taking those forced by the context:
// the run's trace id, the span id of an attempt's traceparent.
type idGen struct {
	mu  sync.Mutex // guards rnd
	rnd io.Reader
}

func (g *idGen) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	f, _ := ctx.Value(forcedKey{}).(forced)
	tid := f.trace
	for !tid.IsValid() {
		g.fill(tid[:])
	}
	return tid, g.NewSpanID(ctx, tid)
}

func (g *idGen) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	f, _ := ctx.Value(forcedKey{}).(forced)
	sid := f.span
	for !sid.IsValid() {
		g.fill(sid[:])
	}
	return sid
}

// fill reads random bytes; if the reader fails, ids still must be made, so
// math/rand fills in.
func (g *idGen) fill(b []byte) {
	g.mu.Lock()
	_, err := io.ReadFull(g.rnd, b)
	g.mu.Unlock()
	if err != nil {
		for i := range b {
			b[i] = byte(mrand.Uint32())
		}
	}
}
