package review

import (
	"context"

	"github.com/apiary-dev/apiary/internal/gate"
)

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
	rep, err := gate.Run(ctx, gate.Spec{WriteScope: []string{"."}, Sealed: s.Sealed, Forbidden: s.Patterns},
		gate.Candidate{Repo: c.Repo, Base: c.Base, Commit: c.Head})
	if err != nil {
		return nil, err
	}
	out := make([]Finding, 0, len(rep.Failures))
	for _, f := range rep.Failures {
		kind := f.Pattern
		if f.Gate == gate.GateSealed {
			kind = KindSealed
		}
		out = append(out, Finding{Kind: kind, Severity: SevHigh, File: f.File, Line: f.Line, Evidence: f.Detail})
	}
	return out, nil
}
