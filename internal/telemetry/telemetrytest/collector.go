// Package telemetrytest is an OTLP/HTTP trace collector for tests: a real
// HTTP server on 127.0.0.1 that decodes the protobuf export requests the
// OpenTelemetry exporter sends and keeps the spans as plain values. It is
// imported only from _test.go files.
package telemetrytest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one exported span.
type Span struct {
	TraceID, SpanID, Parent string // lower-case hex; Parent "" for a root
	Name                    string
	Start, End              time.Time
	Attrs                   map[string]string // every value formatted as text
	Error                   bool              // status code Error
	Status                  string            // status message
	Events                  []string          // event names
	Service                 string            // the resource's service.name
}

// Collector receives OTLP/HTTP trace exports. Its methods are safe for
// concurrent use.
type Collector struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []Span
	bad   []string
}

// Start starts a collector that t's cleanup stops; its URL is the OTLP
// endpoint base.
func Start(t testing.TB) *Collector {
	t.Helper()
	c := &Collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	return c
}

// URL is the base URL to configure as the OTLP endpoint.
func (c *Collector) URL() string { return c.srv.URL }

// Spans returns the spans received so far, in arrival order.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.spans)
}

// Errors returns the requests that could not be decoded.
func (c *Collector) Errors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.bad)
}

func (c *Collector) fail(w http.ResponseWriter, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.mu.Lock()
	c.bad = append(c.bad, msg)
	c.mu.Unlock()
	http.Error(w, msg, http.StatusBadRequest)
}

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		c.fail(w, "%s %s: want POST /v1/traces", r.Method, r.URL.Path)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			c.fail(w, "gzip: %v", err)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		c.fail(w, "read: %v", err)
		return
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		c.fail(w, "decode: %v", err)
		return
	}
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Parent: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(),
					Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
					Attrs: attrs(s.GetAttributes()), Service: service}
				if st := s.GetStatus(); st != nil {
					sp.Error = st.GetCode() == 2 // STATUS_CODE_ERROR
					sp.Status = st.GetMessage()
				}
				for _, e := range s.GetEvents() {
					sp.Events = append(sp.Events, e.GetName())
				}
				got = append(got, sp)
			}
		}
	}
	c.mu.Lock()
	c.spans = append(c.spans, got...)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func attrs(kvs []*common.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		var s string
		switch v.GetValue().(type) {
		case *common.AnyValue_StringValue:
			s = v.GetStringValue()
		case *common.AnyValue_IntValue:
			s = strconv.FormatInt(v.GetIntValue(), 10)
		case *common.AnyValue_BoolValue:
			s = strconv.FormatBool(v.GetBoolValue())
		case *common.AnyValue_DoubleValue:
			s = strconv.FormatFloat(v.GetDoubleValue(), 'g', -1, 64)
		default:
			s = v.String()
		}
		m[kv.GetKey()] = s
	}
	return m
}
