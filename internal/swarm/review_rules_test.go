package swarm

import (
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/gate"
)

func TestEvaluateRules(t *testing.T) {
	t.Parallel()
	f := func(id, kind string, sev gate.Severity, m *gate.Metric) gate.Finding {
		return gate.Finding{ID: id, Kind: kind, Severity: sev, Evidence: "e", Analyser: "a", Metric: m}
	}
	cov := func(id string, delta float64) gate.Finding {
		return f(id, gate.KindCoverage, gate.SevInfo, &gate.Metric{Name: gate.MetricCoverage, Base: 80, Head: 80 + delta, Delta: delta})
	}
	bench := func(id string, delta float64, sig bool) gate.Finding {
		return f(id, gate.KindBenchmark, gate.SevInfo, &gate.Metric{Name: gate.MetricSecPerOp, Delta: delta, Significant: sig})
	}
	ptr := func(v float64) *float64 { return &v }
	rules := DecisionRules{BlockSeverity: gate.SevHigh, MaxBenchRegressionPct: ptr(10), APIBreak: APIBreakVersionBump, MinCoverageDelta: ptr(-1)}
	tests := []struct {
		name     string
		rules    func(DecisionRules) DecisionRules
		findings []gate.Finding
		decision string
		failed   map[string][]string // failed rule → cited ids
	}{
		{"nothing", nil, nil, ReviewMerge, nil},
		{"info and medium only", nil, []gate.Finding{f("a/1", "note", gate.SevMedium, nil), cov("t/1", 0.5)}, ReviewMerge, nil},
		{"critical secret", nil, []gate.Finding{f("s/1", gate.KindSecret, gate.SevCritical, nil), f("s/2", "note", gate.SevInfo, nil)}, ReviewBlock,
			map[string][]string{RuleSeverity: {"s/1"}}},
		{"lower threshold", func(r DecisionRules) DecisionRules { r.BlockSeverity = gate.SevMedium; return r },
			[]gate.Finding{f("a/1", "note", gate.SevMedium, nil)}, ReviewBlock, map[string][]string{RuleSeverity: {"a/1"}}},
		{"coverage drop", nil, []gate.Finding{cov("t/1", -3)}, ReviewBlock, map[string][]string{RuleCoverage: {"t/1"}}},
		{"coverage within", nil, []gate.Finding{cov("t/1", -0.9)}, ReviewMerge, nil},
		{"no coverage rule", func(r DecisionRules) DecisionRules { r.MinCoverageDelta = nil; return r }, []gate.Finding{cov("t/1", -30)}, ReviewMerge, nil},
		{"benchmark regression", nil, []gate.Finding{bench("b/1", 25, true), bench("b/2", 5, true), bench("b/3", -40, true)}, ReviewBlock,
			map[string][]string{RuleBenchmarks: {"b/1"}}},
		{"insignificant slowdown", nil, []gate.Finding{bench("b/1", 50, false)}, ReviewMerge, nil},
		{"benchmark rule off", func(r DecisionRules) DecisionRules { r.MaxBenchRegressionPct = ptr(-1); return r }, []gate.Finding{bench("b/1", 90, true)}, ReviewMerge, nil},
		{"api break", nil, []gate.Finding{f("api/1", gate.KindAPIBreak, gate.SevHigh, nil)}, ReviewBlock, map[string][]string{RuleAPI: {"api/1"}}},
		{"api break with bump", nil, []gate.Finding{f("api/1", gate.KindAPIBreak, gate.SevHigh, nil), f("api/2", gate.KindVersionBump, gate.SevInfo, nil)}, ReviewMerge, nil},
		{"api break blocked despite bump", func(r DecisionRules) DecisionRules { r.APIBreak = APIBreakBlock; return r },
			[]gate.Finding{f("api/1", gate.KindAPIBreak, gate.SevHigh, nil), f("api/2", gate.KindVersionBump, gate.SevInfo, nil)}, ReviewBlock,
			map[string][]string{RuleAPI: {"api/1"}}},
		{"api break allowed", func(r DecisionRules) DecisionRules { r.APIBreak = APIBreakAllow; return r },
			[]gate.Finding{f("api/1", gate.KindAPIBreak, gate.SevHigh, nil)}, ReviewMerge, nil},
		{"everything at once", nil, []gate.Finding{f("s/1", gate.KindSecret, gate.SevCritical, nil), cov("t/1", -5), bench("b/1", 300, true),
			f("api/1", gate.KindAPIBreak, gate.SevHigh, nil)}, ReviewBlock,
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
			if rs := reasons(results); (len(rs) > 0) != (decision == ReviewBlock) || (len(rs) > 0 && !strings.Contains(strings.Join(rs, ";"), ":")) {
				t.Errorf("reasons %v for %s", rs, decision)
			}
		})
	}
}
