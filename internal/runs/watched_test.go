package runs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// TestWatched: the run is announced once on head, the caller's OnEvent
// still sees every event, the progress is drawn and closed, and the report
// prints as text and as JSON.
func TestWatched(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "a\n"})
	flag := filepath.Join(t.TempDir(), "go")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var head, prog bytes.Buffer
	var events atomic.Int64
	cfg := Config{Repo: repo, OnEvent: func(Event) { events.Add(1) }}
	rep, err := Watched(boundedCtx(t), cfg, NewRun{PlanFile: "plan.yaml", PlanData: []byte(touchPlan(flag))}, false, &head, &Progress{W: &prog})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("run %s", rep.Status)
	}
	if head.String() != "run "+rep.RunID+"\n" {
		t.Errorf("head %q, want the run announced once", head.String())
	}
	if events.Load() == 0 || prog.Len() == 0 {
		t.Errorf("%d events seen by OnEvent, progress %q", events.Load(), prog.String())
	}
	var text, js bytes.Buffer
	if err := WriteReport(&text, rep, false); err != nil || !strings.Contains(text.String(), rep.RunID) {
		t.Errorf("text report: %v\n%s", err, text.String())
	}
	var back Report
	if err := WriteReport(&js, rep, true); err != nil || json.Unmarshal(js.Bytes(), &back) != nil || back.RunID != rep.RunID {
		t.Errorf("JSON report: %v\n%s", err, js.String())
	}
}
