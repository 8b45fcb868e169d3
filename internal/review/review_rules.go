package review

import (
	"fmt"
	"strings"
)

// Rule names, in the order they are evaluated.
const (
	RuleSeverity   = "severity"
	RuleCoverage   = "coverage"
	RuleBenchmarks = "benchmarks"
	RuleAPI        = "api"
	RuleRules      = "rules" // the change edits the review's own rules
	RuleReviewers  = "reviewers"
	RuleIntegrity  = "integrity" // a reviewer modified the checkout
)

// RuleResult is one decision rule's verdict on the findings, citing the
// findings it rests on.
type RuleResult struct {
	Rule   string `json:"rule"`
	Passed bool   `json:"passed"`
	// Pending: the rule has not passed and waits for a person (apiary
	// review resolve): the reviewers disagreed, or the change edits the
	// review's rules.
	Pending  bool     `json:"pending,omitempty"`
	Detail   string   `json:"detail"`
	Findings []string `json:"findings,omitempty"` // ids of the cited findings
	// By and At record who settled a pending rule, and when (RFC 3339).
	By string `json:"by,omitempty"`
	At string `json:"at,omitempty"`
}

// EvaluateRules applies the decision rules to the findings. Every rule is
// reported, passed or not; the decision is merge exactly when all pass.
// Agreement among analysers or reviewers is never a rule: a change merges
// because no threshold is crossed.
//
//   - severity: no finding at or above BlockSeverity (API breaks and rule
//     changes are judged by the api and rules rules instead);
//   - coverage: the total coverage delta is at least MinCoverageDelta
//     (when set and measured);
//   - benchmarks: no benchmark is significantly slower by more than
//     MaxBenchRegressionPct percent (when not negative);
//   - api: no API break, or (version-bump) none without a version bump,
//     or (allow) any.
func EvaluateRules(r DecisionRules, fs []Finding) (string, []RuleResult) {
	block := r.BlockSeverity
	if block == "" {
		block = SevHigh
	}
	var out []RuleResult
	var ids []string
	for _, f := range fs {
		if f.Kind != KindAPIBreak && f.Kind != KindRulesChanged && f.Severity.AtLeast(block) {
			ids = append(ids, f.ID)
		}
	}
	sev := RuleResult{Rule: RuleSeverity, Passed: len(ids) == 0, Findings: ids,
		Detail: fmt.Sprintf("no finding at or above %s", block)}
	if !sev.Passed {
		sev.Detail = fmt.Sprintf("%d finding(s) at or above %s", len(ids), block)
	}
	out = append(out, sev)

	if r.MinCoverageDelta != nil {
		res := RuleResult{Rule: RuleCoverage, Passed: true, Detail: "coverage not measured"}
		for _, f := range fs {
			if f.Kind != KindCoverage || f.Metric == nil || f.Metric.Name != MetricCoverage {
				continue
			}
			res.Findings = append(res.Findings, f.ID)
			if f.Metric.Delta < *r.MinCoverageDelta {
				res.Passed = false
				res.Detail = fmt.Sprintf("coverage changed by %+.1f pp (%.1f%% → %.1f%%), below the minimum %+.1f pp",
					f.Metric.Delta, f.Metric.Base, f.Metric.Head, *r.MinCoverageDelta)
			} else if res.Passed {
				res.Detail = fmt.Sprintf("coverage changed by %+.1f pp, within %+.1f pp", f.Metric.Delta, *r.MinCoverageDelta)
			}
		}
		out = append(out, res)
	}

	if r.MaxBenchRegressionPct != nil && *r.MaxBenchRegressionPct >= 0 {
		limit := *r.MaxBenchRegressionPct
		res := RuleResult{Rule: RuleBenchmarks, Passed: true}
		n, worst := 0, 0.0
		var slow []string
		for _, f := range fs {
			if f.Kind != KindBenchmark || f.Metric == nil {
				continue
			}
			n++
			if f.Metric.Significant && f.Metric.Delta > limit {
				slow = append(slow, f.ID)
				worst = max(worst, f.Metric.Delta)
			}
		}
		switch {
		case len(slow) > 0:
			res.Passed, res.Findings = false, slow
			res.Detail = fmt.Sprintf("%d benchmark(s) significantly slower than the %.0f%% allowed (worst %+.1f%%)", len(slow), limit, worst)
		case n == 0:
			res.Detail = "no benchmark compared"
		default:
			res.Detail = fmt.Sprintf("%d benchmark(s) compared, none significantly slower than %.0f%%", n, limit)
		}
		out = append(out, res)
	}

	var breaks, bumps []string
	for _, f := range fs {
		switch f.Kind {
		case KindAPIBreak:
			breaks = append(breaks, f.ID)
		case KindVersionBump:
			bumps = append(bumps, f.ID)
		}
	}
	api := RuleResult{Rule: RuleAPI, Passed: true, Detail: "no API break", Findings: breaks}
	if len(breaks) > 0 {
		switch r.APIBreak {
		case APIBreakAllow:
			api.Detail = fmt.Sprintf("%d API break(s), allowed by the configuration", len(breaks))
		case APIBreakBlock:
			api.Passed, api.Detail = false, fmt.Sprintf("%d API break(s); the configuration allows none", len(breaks))
		default:
			if len(bumps) > 0 {
				api.Findings = append(api.Findings, bumps...)
				api.Detail = fmt.Sprintf("%d API break(s) with a version bump", len(breaks))
			} else {
				api.Passed, api.Detail = false, fmt.Sprintf("%d API break(s) without a version bump", len(breaks))
			}
		}
	}
	out = append(out, api)
	return decide(out), out
}

// decide is merge exactly when every rule passed.
func decide(rs []RuleResult) string {
	for _, r := range rs {
		if !r.Passed {
			return Block
		}
	}
	return Merge
}

// Next steps of a blocked review (Report.Next).
const (
	NextResolve = "resolve" // only rules waiting for a person fail: apiary review resolve
	NextRerun   = "rerun"   // every reviewer failed: no review was done, run it again
)

// nextStep says what a blocked review waits for: a person, when every
// failed rule is pending; a re-run, when the reviewers all failed and
// nothing else blocks; nothing a person can settle otherwise (the change
// must change).
func nextStep(rs []RuleResult, st *ReviewerStage) string {
	failed, pending := 0, 0
	for _, r := range rs {
		if !r.Passed {
			failed++
			if r.Pending {
				pending++
			}
		}
	}
	switch {
	case failed == 0:
		return ""
	case failed == pending:
		return NextResolve
	case st != nil && st.Outcome == ReviewersFailed && failed == pending+1:
		return NextRerun
	}
	return ""
}

// onlyPending reports whether every rule that failed waits for a person.
func onlyPending(rs []RuleResult) bool {
	for _, r := range rs {
		if !r.Passed && !r.Pending {
			return false
		}
	}
	return true
}

// reasons lists the failed rules, for the report's summary.
func reasons(rs []RuleResult) []string {
	var out []string
	for _, r := range rs {
		if !r.Passed {
			s := r.Rule + ": " + r.Detail
			if r.Pending {
				s += " [awaiting a person]"
			}
			if len(r.Findings) > 0 {
				s += " (" + strings.Join(r.Findings, ", ") + ")"
			}
			out = append(out, s)
		}
	}
	return out
}
