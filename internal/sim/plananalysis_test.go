package sim

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestPlanAnalysis: the analysis' fields are at the top of the JSON, the
// tail under "tail" only when there is one; the text is the analysis', then
// the tail's.
func TestPlanAnalysis(t *testing.T) {
	t.Parallel()
	pl := mustPlan(t, workedSpeculative)
	a := PlanAnalysis{Analysis: pl.Analyze(0)}
	var m map[string]any
	if err := json.Unmarshal([]byte(asJSON(t, a)), &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["work_s"]; !ok {
		t.Errorf("no work_s at the top: %v", m)
	}
	if _, ok := m["tail"]; ok {
		t.Error("a tail without one")
	}
	var plain bytes.Buffer
	if err := a.WriteText(&plain, "plan.yaml"); err != nil {
		t.Fatal(err)
	}
	tail, err := AnalyzePlanTail(pl, PlanTailParams{P90Ratio: 1.5, Trials: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	a.Tail = tail
	var both, tailText bytes.Buffer
	if err := a.WriteText(&both, "plan.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := tail.WriteText(&tailText); err != nil {
		t.Fatal(err)
	}
	if both.String() != plain.String()+tailText.String() || !strings.Contains(asJSON(t, a), `"tail":`) {
		t.Errorf("with a tail:\n%s", both.String())
	}
}
