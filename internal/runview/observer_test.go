package runview

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
	"github.com/apiary-dev/apiary/internal/telemetry"
)

// TestObserver: events reach the metrics and the notify hook; with tracing
// off, Close has nothing to export.
func TestObserver(t *testing.T) {
	t.Parallel()
	tracing, err := telemetry.NewTracing(t.Context(), telemetry.TraceOptions{ServiceName: "test"})
	if err != nil {
		t.Fatal(err)
	}
	o := NewObserver(t.TempDir(), tracing)
	notified := 0
	o.Notify(func() { notified++ })
	now := time.Now()
	o.Event(runs.Event{Time: now, Run: "r", Kind: rundir.EvRunStarted})
	o.Event(runs.Event{Time: now, Run: "r", Kind: rundir.EvTaskDone, Task: "a", Status: "succeeded"})
	if notified != 2 {
		t.Errorf("notified %d times, want 2", notified)
	}
	rec := httptest.NewRecorder()
	o.Metrics().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	want := `apiary_runtime_events_total{kind="` + rundir.EvTaskDone + `"} 1`
	if rec.Code != 200 || !strings.Contains(string(body), want) {
		t.Errorf("metrics %d, no %s:\n%s", rec.Code, want, body)
	}
	if err := o.Close(t.Context()); err != nil {
		t.Errorf("Close: %v", err)
	}
}
