package gate

import "context"

// ForbiddenScan reports the change's forbidden diff patterns (deleted
// tests, removed assertions, added skip markers, emptied test files) with
// the very detectors the runtime's gate uses, and changes to sealed paths.
type ForbiddenScan struct {
	// Patterns are envelope.Pattern* names; nil means every built-in one.
	Patterns []string
	// Sealed are paths the change may not touch (InScope semantics).
	Sealed []string
}

// Analyse implements Analyser. Each failure becomes a finding of severity
// high whose kind is the pattern's name (or "sealed").
func (s ForbiddenScan) Analyse(ctx context.Context, c *Change) ([]Finding, error) {
	enabled, err := enabledPatterns(s.Patterns)
	if err != nil {
		return nil, err
	}
	fails := scopeFailures(c.Changes, []string{"."}, s.Sealed)
	if len(enabled) > 0 {
		fs, err := Forbidden(ctx, c.Repo, c.Base, c.Head, c.Changes, enabled)
		if err != nil {
			return nil, err
		}
		fails = append(fails, fs...)
	}
	out := make([]Finding, 0, len(fails))
	for _, f := range fails {
		kind := f.Pattern
		if f.Gate == GateSealed {
			kind = KindSealed
		}
		out = append(out, Finding{Kind: kind, Severity: SevHigh, File: f.File, Line: f.Line, Evidence: f.Detail})
	}
	return out, nil
}
