package durable

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// snippetRunes is how much of a match a report shows: enough to locate a
// hit, never the whole secret.
const snippetRunes = 16

// familyAction is the suggested action per built-in family.
var familyAction = map[string]Action{
	"api_key": ActionRedact, "github_pat": ActionRedact, "jwt": ActionRedact, "pem_block": ActionRedact,
	"aws_secret": ActionRedact, "pii": ActionRedact, "binary_hint": ActionSplit,
}

// riskReport is the classifier's verdict on one text.
type riskReport struct {
	score    int // scoreUnit fixed point, clamped to [0, scoreUnit]
	verdict  string
	bytes    int
	lines    int
	maxLine  int
	detected []map[string]any
	actions  []map[string]any
	families []string // families with at least one hit, sorted
}

// scoreContent classifies text: each family adds weight·min(1.5, 1+0.25·(hits−1)),
// each size rule whose metric strictly exceeds its bound adds its score.
func scoreContent(text string, pol *policy) riskReport {
	rep := riskReport{bytes: len(text)}
	rep.lines, rep.maxLine = lineMetrics(text)
	var newlines []int // lazily built line index
	lineOf := func(off int) int {
		if newlines == nil {
			newlines = []int{}
			for i := 0; i < len(text); i++ {
				if text[i] == '\n' {
					newlines = append(newlines, i)
				}
			}
		}
		return sort.SearchInts(newlines, off) + 1
	}
	hits := map[string]int{}
	for _, p := range pol.patterns {
		if pol.disabled[p.family] {
			continue
		}
		var locs [][2]int
		if p.fast != nil {
			locs = p.fast(text)
		} else {
			for _, m := range p.re.FindAllStringIndex(text, -1) {
				locs = append(locs, [2]int{m[0], m[1]})
			}
		}
		for _, m := range locs {
			hits[p.family]++
			rep.detected = append(rep.detected, map[string]any{
				"kind": p.family, "pattern": p.name, "match": snippet(text[m[0]:m[1]]), "line": lineOf(m[0]),
			})
		}
	}
	score := 0
	for fam, n := range hits {
		rep.families = append(rep.families, fam)
		score += pol.weights[fam] * min(6, 3+n) / 4
	}
	sort.Strings(rep.families)
	metrics := map[string]int{"total_bytes": rep.bytes, "max_line_len": rep.maxLine, "line_count": rep.lines}
	var triggered []sizeRule
	for _, r := range sizeRules {
		if v := metrics[r.key]; v > r.gt {
			score += r.score
			triggered = append(triggered, r)
			rep.detected = append(rep.detected, map[string]any{
				"kind": "size", "pattern": r.name, "match": nil, "line": nil, "value": v, "threshold": r.gt,
			})
		}
	}
	rep.score = max(0, min(scoreUnit, score))
	rep.verdict = pol.verdict(rep.score)
	var redact []string
	for _, f := range rep.families {
		if familyAction[f] == ActionRedact {
			redact = append(redact, f)
		}
	}
	rep.actions = []map[string]any{}
	if len(redact) > 0 {
		rep.actions = append(rep.actions, map[string]any{"action": string(ActionRedact), "targets": redact})
	}
	if hits["binary_hint"] > 0 {
		rep.actions = append(rep.actions, map[string]any{"action": string(ActionSplit), "reason": "binary_content_detected"})
	}
	for _, r := range triggered {
		rep.actions = append(rep.actions, map[string]any{
			"action": string(r.action), "reason": fmt.Sprintf("%s_%d_exceeds_%d", r.key, metrics[r.key], r.gt),
		})
	}
	if rep.detected == nil {
		rep.detected = []map[string]any{}
	}
	return rep
}

// scoreFloat renders a fixed-point score with at most 4 decimals.
func scoreFloat(s int) float64 { return float64(s) / scoreUnit }

// lineMetrics returns the line count (a final line without "\n" counts) and
// the longest line in characters.
func lineMetrics(text string) (lines, maxLine int) {
	if text == "" {
		return 0, 0
	}
	cur := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\n':
			lines++
			maxLine = max(maxLine, cur)
			cur = 0
		case c < utf8.RuneSelf || c >= 0xC0:
			cur++ // count characters: skip UTF-8 continuation bytes
		}
	}
	maxLine = max(maxLine, cur)
	if text[len(text)-1] != '\n' {
		lines++
	}
	return lines, maxLine
}

// snippet escapes newlines and keeps the first 16 characters, adding "…".
func snippet(m string) string {
	m = strings.ReplaceAll(m, "\n", `\n`)
	if utf8.RuneCountInString(m) <= snippetRunes {
		return m
	}
	n := 0
	for i := range m {
		if n == snippetRunes {
			return m[:i] + "…"
		}
		n++
	}
	return m
}

// RiskScoreParams are rw.risk_score's arguments.
type RiskScoreParams struct {
	Content      string
	LanguageHint *string
	TargetPath   *string
}

// RiskScore classifies draft content before it is written: score (4 dp),
// verdict, size metrics, detected patterns (matches cut to 16 characters)
// and suggested actions. Only a bad policy file fails it.
func (w *Workspace) RiskScore(ctx context.Context, p RiskScoreParams) (Result, error) {
	if err := w.allow("rw.risk_score", ""); err != nil {
		return nil, err
	}
	pol, err := w.loadPolicy(w.basePolicy)
	if err != nil {
		return nil, err
	}
	rep := scoreContent(p.Content, pol)
	return Result{
		"ok": true, "score": scoreFloat(rep.score), "verdict": rep.verdict, "bytes": rep.bytes,
		"line_count": rep.lines, "max_line_len": rep.maxLine, "detected_patterns": rep.detected,
		"suggested_actions": rep.actions, "language_hint": optString(p.LanguageHint), "target_path": optString(p.TargetPath),
	}, nil
}

// optString returns *s or nil, for JSON null.
func optString(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
