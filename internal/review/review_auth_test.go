package review

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReportSealRoundTrip: a sealed report still verifies after it is
// written as JSON and read back — whatever its strings, numbers and empty
// parts — and any change to it does not.
func TestReportSealRoundTrip(t *testing.T) {
	t.Parallel()
	p := 0.0123456789
	delta := -12.3
	rep := &Report{ReviewID: "r-1", Repo: "/repo", BaseRef: "main", Base: "a", MergeBase: "a", Head: "b",
		Changes: []ChangedPath{{Status: "A", Path: "x<y>&z.go"}}, Decision: Block, Reasons: []string{"severity: <1> & \"2\""},
		Rules:  []RuleResult{{Rule: RuleSeverity, Detail: "\u2028 line\tsep", Findings: []string{"a/1"}}, {Rule: RuleRules, Passed: true}},
		Config: "review.yaml@a", Thresholds: &DecisionRules{BlockSeverity: SevHigh, MaxBenchRegressionPct: &delta, APIBreak: APIBreakVersionBump},
		Findings: []Finding{{ID: "a/1", Kind: "k", Severity: SevHigh, Evidence: "bad \xff utf-8 and a NUL \x00", Analyser: "a",
			Metric: &Metric{Name: MetricSecPerOp, Base: 1e-9, Head: math.MaxFloat64 / 2, Delta: 1.0 / 3, P: &p, Significant: true}}},
		Analysers: []AnalyserRun{}, Decisions: nil, Started: time.Date(2026, 12, 1, 9, 0, 0, 123456789, time.UTC), WallS: 0.1 + 0.2}
	key := []byte(strings.Repeat("k", keyBytes))
	if err := rep.Seal(key); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Verify(key); err != nil {
		t.Fatalf("the round trip broke the MAC: %v", err)
	}
	if err := back.Verify([]byte(strings.Repeat("j", keyBytes))); !errors.Is(err, ErrForged) {
		t.Errorf("another key: %v", err)
	}
	back.WallS += 1e-9
	if err := back.Verify(key); !errors.Is(err, ErrForged) {
		t.Errorf("an edited report verified: %v", err)
	}
}

// TestReviewKey: the key is made once, mode 0600; two reviews making it at
// once end with the same key; resolve never makes one; a malformed key is
// an error.
func TestReviewKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "review.key")
	if _, err := loadKey(path, nil, false); !errors.Is(err, ErrForged) {
		t.Errorf("no key, not created: %v", err)
	}
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := loadKey(path, strings.NewReader(strings.Repeat(string(rune('a'+i)), keyBytes)), true)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		}()
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if string(k) != string(keys[0]) || len(k) != keyBytes {
			t.Fatalf("keys differ: %x vs %x", k, keys[0])
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file %v (%v)", fi.Mode(), err)
	}
	if err := os.WriteFile(path, []byte("not hex\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadKey(path, nil, false); err == nil || errors.Is(err, ErrForged) {
		t.Errorf("a malformed key: %v", err)
	}
}

// FuzzReportSeal: whatever a report's text holds, sealing survives being
// written and read back.
func FuzzReportSeal(f *testing.F) {
	f.Add("evidence", "detail", 1.5)
	f.Add("\xff\xfe\x00<&>\u2028", "\"\\", math.Inf(1))
	f.Fuzz(func(t *testing.T, evidence, detail string, wall float64) {
		if math.IsInf(wall, 0) || math.IsNaN(wall) {
			wall = 0 // JSON has no infinities; reports never hold one
		}
		rep := &Report{ReviewID: "r", Decision: Merge, WallS: wall, Reasons: []string{detail},
			Rules:    []RuleResult{{Rule: RuleSeverity, Passed: true, Detail: detail}},
			Findings: []Finding{{ID: "a/1", Kind: "k", Severity: SevInfo, Evidence: evidence, Action: detail}}}
		key := []byte(strings.Repeat("k", keyBytes))
		if err := rep.Seal(key); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		var back Report
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if err := back.Verify(key); err != nil {
			t.Fatalf("%v: %q", err, b)
		}
	})
}
