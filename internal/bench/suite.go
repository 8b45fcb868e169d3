package bench

import (
	"context"
	"fmt"
	"io"
)

// Suite is the scenarios of apiary bench gateway: every scenario in every
// variant, in each mode — direct (unless NoDirect), through the gateway,
// and through the gateway with Ablate's primitive off (when set).
type Suite struct {
	Scenarios []Scenario
	Variants  []string
	Ablate    string // one of Ablations, or ""
	NoDirect  bool
	Scale     float64 // applied to every duration, in (0, 1]
	Seed      uint64
	// Progress gets a line before and after each run, and the runs' own
	// messages.
	Progress io.Writer
}

// Modes are the modes each scenario runs in, in order.
func (s Suite) Modes() []string {
	modes := []string{"gateway"}
	if !s.NoDirect {
		modes = append([]string{"direct"}, modes...)
	}
	if s.Ablate != "" {
		modes = append(modes, "gateway-no-"+s.Ablate)
	}
	return modes
}

// RunSuite runs s, variant by variant, scenario by scenario, mode by mode
// (see RunScenario), and stops at the first error.
func RunSuite(ctx context.Context, s Suite) ([]ScenarioResult, error) {
	progress := s.Progress
	if progress == nil {
		progress = io.Discard
	}
	var results []ScenarioResult
	for _, v := range s.Variants {
		for _, sc := range s.Scenarios {
			for _, mode := range s.Modes() {
				fmt.Fprintf(progress, "bench gateway: %s/%s %s ...\n", sc.Name, v, mode)
				r, err := RunScenario(ctx, sc, v, mode, s.Scale, s.Seed, progress)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(progress, "bench gateway: %s/%s %s: %d/%d agents failed, wall %.1fs (bound %.1fs, ×%.3f)\n",
					sc.Name, v, mode, r.FailedAgents, r.Agents, r.WallS, r.LowerBoundS, r.Ratio)
				results = append(results, r)
			}
		}
	}
	return results, nil
}

// ZooReport is apiary bench gateway --zoo's JSON: every run and the
// summary.
type ZooReport struct {
	Runs    []ZooResult `json:"runs"`
	Summary ZooSummary  `json:"summary"`
}
