package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadParamsFile: parameters come over the base; bad content names the
// file; Warnings are prefixed with their source and empty for parameters
// that keep their conditions.
func TestReadParamsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "p.json"), filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(`{"median_s": 3, "p90_s": 9}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"median_s": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p, conds, err := ReadParamsFile(good, DefaultSwarmParams())
	if err != nil || p.MedianS != 3 || p.P90S != 9 || conds != nil {
		t.Errorf("good: %+v %v %v", p, conds, err)
	}
	if _, _, err := ReadParamsFile(bad, DefaultSwarmParams()); err == nil || !strings.HasPrefix(err.Error(), bad+": ") {
		t.Errorf("bad: %v", err)
	}
	if _, _, err := ReadParamsFile(filepath.Join(dir, "none.json"), DefaultSwarmParams()); err == nil {
		t.Error("a missing file read")
	}
	cond := FitCondition{Fitted: []string{"central_msg_s"}, Under: "coordination alone", Settings: []Setting{{Name: "pass_rate", Value: 1}}}
	p.PassRate = 0.5
	ws := Warnings("cal.json", []FitCondition{cond}, p)
	if len(ws) != 1 || !strings.HasPrefix(ws[0], "cal.json: ") {
		t.Errorf("warnings %q", ws)
	}
	p.PassRate = 1
	if ws := Warnings("cal.json", []FitCondition{cond}, p); ws != nil {
		t.Errorf("warnings for kept conditions: %q", ws)
	}
}
