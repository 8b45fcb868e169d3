package review

import (
	"slices"
	"strings"
	"testing"
)

func TestEvaluateRules(t *testing.T) {
	t.Parallel()
	f := func(id, kind string, sev Severity, m *Metric) Finding {
		return Finding{ID: id, Kind: kind, Severity: sev, Evidence: "e", Analyser: "a", Metric: m}
	}
	cov := func(id string, delta float64) Finding {
		return f(id, KindCoverage, SevInfo, &Metric{Name: MetricCoverage, Base: 80, Head: 80 + delta, Delta: delta})
	}
	bench := func(id string, delta float64, sig bool) Finding {
		return f(id, KindBenchmark, SevInfo, &Metric{Name: MetricSecPerOp, Delta: delta, Significant: sig})
	}
	ptr := func(v float64) *float64 { return &v }
	rules := DecisionRules{BlockSeverity: SevHigh, MaxBenchRegressionPct: ptr(10), APIBreak: APIBreakVersionBump, MinCoverageDelta: ptr(-1)}
	tests := []struct {
		name     string
		rules    func(DecisionRules) DecisionRules
		findings []Finding
		decision string
		failed   map[string][]string // failed rule → cited ids
	}{
		{"nothing", nil, nil, Merge, nil},
		{"info and medium only", nil, []Finding{f("a/1", "note", SevMedium, nil), cov("t/1", 0.5)}, Merge, nil},
		{"critical secret", nil, []Finding{f("s/1", KindSecret, SevCritical, nil), f("s/2", "note", SevInfo, nil)}, Block,
			map[string][]string{RuleSeverity: {"s/1"}}},
		{"lower threshold", func(r DecisionRules) DecisionRules { r.BlockSeverity = SevMedium; return r },
			[]Finding{f("a/1", "note", SevMedium, nil)}, Block, map[string][]string{RuleSeverity: {"a/1"}}},
		{"coverage drop", nil, []Finding{cov("t/1", -3)}, Block, map[string][]string{RuleCoverage: {"t/1"}}},
		{"coverage within", nil, []Finding{cov("t/1", -0.9)}, Merge, nil},
		{"no coverage rule", func(r DecisionRules) DecisionRules { r.MinCoverageDelta = nil; return r }, []Finding{cov("t/1", -30)}, Merge, nil},
		{"benchmark regression", nil, []Finding{bench("b/1", 25, true), bench("b/2", 5, true), bench("b/3", -40, true)}, Block,
			map[string][]string{RuleBenchmarks: {"b/1"}}},
		{"insignificant slowdown", nil, []Finding{bench("b/1", 50, false)}, Merge, nil},
		{"benchmark rule off", func(r DecisionRules) DecisionRules { r.MaxBenchRegressionPct = ptr(-1); return r }, []Finding{bench("b/1", 90, true)}, Merge, nil},
		{"api break", nil, []Finding{f("api/1", KindAPIBreak, SevHigh, nil)}, Block, map[string][]string{RuleAPI: {"api/1"}}},
		{"api break with bump", nil, []Finding{f("api/1", KindAPIBreak, SevHigh, nil), f("api/2", KindVersionBump, SevInfo, nil)}, Merge, nil},
		{"api break blocked despite bump", func(r DecisionRules) DecisionRules { r.APIBreak = APIBreakBlock; return r },
			[]Finding{f("api/1", KindAPIBreak, SevHigh, nil), f("api/2", KindVersionBump, SevInfo, nil)}, Block,
			map[string][]string{RuleAPI: {"api/1"}}},
		{"api break allowed", func(r DecisionRules) DecisionRules { r.APIBreak = APIBreakAllow; return r },
			[]Finding{f("api/1", KindAPIBreak, SevHigh, nil)}, Merge, nil},
		{"everything at once", nil, []Finding{f("s/1", KindSecret, SevCritical, nil), cov("t/1", -5), bench("b/1", 300, true),
			f("api/1", KindAPIBreak, SevHigh, nil)}, Block,
			map[string][]string{RuleSeverity: {"s/1"}, RuleCoverage: {"t/1"}, RuleBenchmarks: {"b/1"}, RuleAPI: {"api/1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := rules
			if tt.rules != nil {
				r = tt.rules(r)
			}
			decision, results := EvaluateRules(r, tt.findings)
			if decision != tt.decision {
				t.Errorf("decision %s, want %s: %+v", decision, tt.decision, results)
			}
			failed := map[string][]string{}
			for _, rr := range results {
				if !rr.Passed {
					failed[rr.Rule] = rr.Findings
				}
				if rr.Detail == "" {
					t.Errorf("rule %s has no detail", rr.Rule)
				}
			}
			if len(failed) != len(tt.failed) {
				t.Errorf("failed rules %v, want %v", failed, tt.failed)
			}
			for rule, ids := range tt.failed {
				if !slices.Equal(failed[rule], ids) {
					t.Errorf("rule %s cites %v, want %v", rule, failed[rule], ids)
				}
			}
			if rs := reasons(results); (len(rs) > 0) != (decision == Block) || (len(rs) > 0 && !strings.Contains(strings.Join(rs, ";"), ":")) {
				t.Errorf("reasons %v for %s", rs, decision)
			}
		})
	}
}
