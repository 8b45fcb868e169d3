package runview

import (
	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/runs"
)

// The dashboard declares its own types (it imports no runtime package);
// these map the runtime's report onto them, field by field.

func runView(rep *runs.Report) *dashboard.Run {
	r := &dashboard.Run{ID: rep.RunID, Repo: rep.Repo, IntegrationBranch: rep.IntegrationBranch, StartHead: rep.StartHead,
		Status: rep.Status, Goal: rep.Goal, Tasks: make([]dashboard.Task, 0, len(rep.Tasks)), Totals: totalsView(rep.Totals),
		Predicted: pathView(rep.Predicted), Achieved: pathView(rep.Achieved), WallS: rep.WallS, CASRetries: rep.CASRetries,
		Started: rep.Started, Edges: []dashboard.Edge{}}
	if rep.Planner != nil {
		p := taskView(*rep.Planner)
		r.Planner = &p
	}
	for _, t := range rep.Tasks {
		r.Tasks = append(r.Tasks, taskView(t))
	}
	for _, sh := range rep.Shares {
		r.Shares = append(r.Shares, dashboard.Share{Role: sh.Role, InputTokens: sh.InputTokens, OutputTokens: sh.OutputTokens,
			USD: sh.USD, TokenShare: sh.TokenShare, CostShare: sh.CostShare})
	}
	return r
}

func taskView(t runs.TaskReport) dashboard.Task {
	return dashboard.Task{ID: t.ID, Status: t.Status, Attempts: t.Attempts, Gate: gateView(t.Gate), Commit: t.Commit,
		Integrated: t.Integrated, Usage: usageView(t.Usage), WallS: t.WallS, Reason: t.Reason, Parent: t.Parent,
		Reconciliations: t.Reconciliations}
}

func gateView(g *envelope.GateReason) *dashboard.Gate {
	if g == nil {
		return nil
	}
	return &dashboard.Gate{Gate: g.Gate, Pattern: g.Pattern, File: g.File, Line: g.Line, Detail: g.Detail}
}

func usageView(u runs.TokenUsage) dashboard.Usage {
	return dashboard.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, USD: u.USD, Known: u.Known}
}

func totalsView(t runs.Totals) dashboard.Totals {
	return dashboard.Totals{Tasks: t.Tasks, Succeeded: t.Succeeded, Failed: t.Failed, Cancelled: t.Cancelled, Skipped: t.Skipped,
		Unfinished: t.Unfinished, Attempts: t.Attempts, Usage: usageView(t.Usage), Integrated: t.Integrated,
		GateRejections: t.GateRejections}
}

func pathView(p runs.Path) dashboard.Path {
	return dashboard.Path{Tasks: p.Tasks, Seconds: p.Seconds}
}
