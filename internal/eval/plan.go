package eval

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apiary-dev/apiary/internal/plan"
)

// planDoc is the plan an arm runs, written as JSON (which plan files may
// be).
type planDoc struct {
	Version           int                   `json:"version"`
	IntegrationBranch string                `json:"integration_branch"`
	MaxParallel       int                   `json:"max_parallel"`
	Agents            map[string]plan.Agent `json:"agents"`
	Tasks             []planTask            `json:"tasks"`
}

type planTask struct {
	ID            string         `json:"id"`
	Objective     string         `json:"objective"`
	Agent         string         `json:"agent"`
	Deps          []string       `json:"deps,omitempty"`
	WriteScope    []string       `json:"write_scope"`
	Checks        []string       `json:"checks,omitempty"`
	CheckTimeoutS float64        `json:"check_timeout_s"`
	EstimateS     float64        `json:"estimate_s"`
	Budget        map[string]any `json:"budget"`
}

// maxParallel is how many agents of arm may work at once.
func maxParallel(ts *TaskSet, arm Arm, o Options) int {
	switch {
	case arm == Single:
		return 1
	case o.MaxParallel > 0:
		return o.MaxParallel
	case ts.Swarm.MaxParallel > 0:
		return ts.Swarm.MaxParallel
	}
	return len(ts.Tasks)
}

// BuildPlan returns the plan of an arm. The single arm has one task,
// SingleTaskID, whose objective lists every task's prompt and whose write
// scope and checks are the union of theirs; the swarm arm has the set's
// tasks. Every task's budget is the arm's whole budget in dollars: the
// arm's tasks share it, and the gateway, not a split made in advance,
// holds the arm to it. Neither plan holds anything of the hidden checks.
// Agent profiles: "agent" for the work and for reconciliations, with
// APIARY_EVAL_ARM set.
func BuildPlan(ts *TaskSet, arm Arm, o Options) ([]byte, error) {
	prof := o.Agent
	prof.Env = maps.Clone(prof.Env)
	if prof.Env == nil {
		prof.Env = map[string]string{}
	}
	prof.Env["APIARY_EVAL_ARM"] = string(arm)
	doc := planDoc{Version: 1, IntegrationBranch: "main", Agents: map[string]plan.Agent{"agent": prof}, MaxParallel: maxParallel(ts, arm, o)}
	budget := func(wall float64) map[string]any { return map[string]any{"usd": o.Budget.USD, "wall_clock_s": wall} }
	if arm == Single {
		var obj strings.Builder
		fmt.Fprintf(&obj, "Complete all %d of the following tasks in this repository, in any order that works.\n", len(ts.Tasks))
		var scope, checks []string
		wall, est := 0.0, 0.0
		for i, t := range ts.Tasks {
			fmt.Fprintf(&obj, "\n## Task %d: %s\n\n%s\n", i+1, t.ID, strings.TrimSpace(t.PromptText))
			scope = append(scope, t.WriteScope...)
			checks = append(checks, t.Checks...)
			wall += t.WallClockS
			est += t.EstimateS
		}
		slices.Sort(scope)
		doc.Tasks = []planTask{{ID: SingleTaskID, Objective: obj.String(), Agent: "agent", WriteScope: slices.Compact(scope),
			Checks: dedup(append(slices.Clone(ts.Checks), checks...)), CheckTimeoutS: ts.CheckTimeoutS, EstimateS: est, Budget: budget(wall)}}
	} else {
		for _, t := range ts.Tasks {
			doc.Tasks = append(doc.Tasks, planTask{ID: t.ID, Objective: strings.TrimSpace(t.PromptText), Agent: "agent", Deps: t.Deps,
				WriteScope: t.WriteScope, Checks: dedup(append(slices.Clone(ts.Checks), t.Checks...)), CheckTimeoutS: ts.CheckTimeoutS,
				EstimateS: t.EstimateS, Budget: budget(t.WallClockS)})
		}
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	if _, err := plan.Parse(string(arm)+"-plan.json", data); err != nil {
		return nil, fmt.Errorf("%w: the %s plan is invalid: %v", ErrTaskSet, arm, err)
	}
	return data, nil
}

func dedup(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
