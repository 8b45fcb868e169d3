package runs

import (
	"fmt"
	"strings"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// unitsOf is an envelope budget in the budget tree's units (wall clock is
// not shared between tasks and stays out).
func unitsOf(b envelope.Budget) supervise.Units {
	return supervise.Units{MicroUSD: microUSD(b.USD), InputTokens: max(b.InputTokens, 0),
		OutputTokens: max(b.OutputTokens, 0), ToolCalls: max(b.ToolCalls, 0)}
}

// unitsOfUsage is what an attempt spent, in the same units.
func unitsOfUsage(u envelope.Usage) supervise.Units {
	return supervise.Units{MicroUSD: microUSD(u.USD), InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, ToolCalls: u.ToolCalls}
}

// budgetOf turns granted units back into an envelope budget: a unit the
// tree does not limit keeps want's value; wall clock comes from want.
func budgetOf(u supervise.Units, limited [4]bool, want envelope.Budget) envelope.Budget {
	out := want
	if limited[0] {
		out.USD = float64(u.MicroUSD) / 1e6
	}
	if limited[1] {
		out.InputTokens = u.InputTokens
	}
	if limited[2] {
		out.OutputTokens = u.OutputTokens
	}
	if limited[3] {
		out.ToolCalls = u.ToolCalls
	}
	return out
}

func unitsText(u supervise.Units) string {
	var parts []string
	if u.MicroUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.6f", float64(u.MicroUSD)/1e6))
	}
	if u.InputTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d input tokens", u.InputTokens))
	}
	if u.OutputTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d output tokens", u.OutputTokens))
	}
	if u.ToolCalls > 0 {
		parts = append(parts, fmt.Sprintf("%d tool calls", u.ToolCalls))
	}
	return strings.Join(parts, ", ")
}

// childBudget carves a child's budget out of its parent's node: in each
// unit the parent limits, at most alpha of what the parent has left, and no
// more than the child asks for; wall clock at most the parent's.
func childBudget(parent *supervise.Budget, parentTmpl envelope.Budget, alpha float64, want envelope.Budget) (*supervise.Budget, envelope.Budget, error) {
	kid, got, err := parent.Carve(alpha, unitsOf(want))
	if err != nil {
		return nil, envelope.Budget{}, fmt.Errorf("%w: %v", ErrChildBudget, err)
	}
	b := want
	b.USD = float64(got.MicroUSD) / 1e6
	b.InputTokens, b.OutputTokens, b.ToolCalls = got.InputTokens, got.OutputTokens, got.ToolCalls
	if pw := parentTmpl.WallClockS; pw > 0 && (b.WallClockS == 0 || b.WallClockS > pw) {
		b.WallClockS = pw
	}
	return kid, b, nil
}
