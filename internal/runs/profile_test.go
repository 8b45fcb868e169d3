package runs

import (
	"slices"
	"testing"

	"github.com/apiary-dev/apiary/internal/plan"
)

// TestPlanProfileFields: a plan's agent profile may restrict Claude Code's
// tools and turns, and the run's profile carries both to the agent.
func TestPlanProfileFields(t *testing.T) {
	t.Parallel()
	p, err := plan.Parse("plan.yaml", []byte(`version: 1
agents:
  careful: {kind: claude, tools: [Read, Grep], max_turns: 7}
tasks:
  - {id: a, objective: a, agent: careful, write_scope: [a.txt]}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := &settings{}
	prof := s.profile("careful", p.Agents["careful"])
	if !slices.Equal(prof.Tools, []string{"Read", "Grep"}) || prof.MaxTurns != 7 {
		t.Errorf("profile %+v", prof)
	}
	if _, err := plan.Parse("plan.yaml", []byte(`version: 1
agents:
  bad: {kind: claude, max_turns: 0}
tasks:
  - {id: a, objective: a, agent: bad, write_scope: [a.txt]}
`)); err == nil {
		t.Error("max_turns 0 accepted")
	}
}
