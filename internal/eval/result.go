package eval

import (
	"fmt"
	"math"
	"strings"
)

// Verdicts.
const (
	VerdictSwarm  = "swarm dominates"
	VerdictSingle = "single agent preferred"
)

// Result is an evaluation: what went in, both arms, and the verdict.
type Result struct {
	TaskSet string    `json:"task_set"`
	Tasks   int       `json:"tasks"`
	Inputs  Inputs    `json:"inputs"`
	Single  ArmResult `json:"single"`
	Swarm   ArmResult `json:"swarm"`
	// TokenAmplification is the swarm's tokens over the single agent's;
	// null when either is not known.
	TokenAmplification *float64 `json:"token_amplification"`
	// CostKnown is whether both arms' costs are known; when not, cost per
	// accepted task is "n/a" and gives no verdict.
	CostKnown bool     `json:"cost_known"`
	Verdict   string   `json:"verdict"`
	Reasons   []string `json:"reasons"`
}

// Inputs are everything that decides the verdict besides the agents' work.
type Inputs struct {
	TaskSet string `json:"task_set_dir"`
	// Digest is the SHA-256 of the task set's files.
	Digest string `json:"task_set_sha256"`
	// Budget is each arm's one hard budget; Metered says the gateway held
	// both arms to it.
	Budget  Budget `json:"budget_per_arm"`
	Metered bool   `json:"metered"`
	// Agents names the agents (e.g. scripted-claude); AgentKind and Model
	// their profile ("" model: the CLI's default).
	Agents    string `json:"agents"`
	AgentKind string `json:"agent_kind"`
	Model     string `json:"model,omitempty"`
	// Seed is the scripted model's seed; ScriptedTurnS its time per turn.
	Seed          *uint64     `json:"seed,omitempty"`
	ScriptedTurnS *float64    `json:"scripted_turn_s,omitempty"`
	MaxParallel   map[Arm]int `json:"max_parallel"`
	// Grading is the checks both arms are graded with.
	Grading []GradingCheck `json:"grading"`
}

// ArmResult is one arm's run, graded.
type ArmResult struct {
	Arm    Arm    `json:"arm"`
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Repo   string `json:"repo"`
	// Quality is ChecksPassed/ChecksTotal over the grading's checks, run
	// one by one on the arm's work (see grade).
	Quality      float64 `json:"quality"`
	ChecksPassed int     `json:"checks_passed"`
	ChecksTotal  int     `json:"checks_total"`
	// Accepted tasks were integrated and passed every check of their own.
	Attempted int `json:"attempted"`
	Accepted  int `json:"accepted"`
	// FromCandidates are the plan tasks not integrated whose last
	// candidate was laid over the final tree for grading.
	FromCandidates []string `json:"graded_from_candidates,omitempty"`
	// TimeS is the time axis: from the start of the arm's run to its last
	// integration (TimeTo says if it is the end of the run instead),
	// waiting for worker slots included.
	TimeS  float64 `json:"time_s"`
	TimeTo string  `json:"time_to"`
	// CriticalPathS is the run's achieved critical path (from the start of
	// its first task to the end of the last, along dependencies) and WallS
	// its first event to its last; neither is judged.
	CriticalPathS float64 `json:"critical_path_s"`
	WallS         float64 `json:"wall_s"`
	// Metered says the arm ran behind the gateway; Spend is what it
	// metered. USD and tokens are the gateway's figures, meaningful when
	// CostKnown and TokensKnown say so (CostNote says why not).
	Metered      bool    `json:"metered"`
	Spend        *Spend  `json:"spend,omitempty"`
	CostKnown    bool    `json:"cost_known"`
	TokensKnown  bool    `json:"tokens_known"`
	CostNote     string  `json:"cost_note,omitempty"`
	USD          float64 `json:"usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	Tokens       int64   `json:"tokens"`
	// CostPerAccepted is USD/Accepted; null when the cost is not known or
	// nothing was accepted.
	CostPerAccepted *float64 `json:"cost_per_accepted_usd"`
	// Messages are the run's coordination messages (see isCoordination).
	Messages        int           `json:"coordination_messages"`
	MessagesPerTask float64       `json:"coordination_messages_per_task"`
	Checks          []GradedCheck `json:"checks"`
	Tasks           []TaskOutcome `json:"tasks"`
}

// TaskOutcome is how one task of the set fared in an arm.
type TaskOutcome struct {
	ID string `json:"id"`
	// GateStatus is the receipt status of the plan task that did it
	// (succeeded, failed, skipped, cancelled); GateReason the gate that
	// rejected it; Integrated whether its work reached the branch.
	GateStatus   string `json:"gate_status"`
	GateReason   string `json:"gate_reason,omitempty"`
	Integrated   bool   `json:"integrated"`
	ChecksPassed int    `json:"checks_passed"`
	ChecksTotal  int    `json:"checks_total"`
	Accepted     bool   `json:"accepted"`
}

// finish computes the comparison.
func (r *Result) finish() {
	r.TokenAmplification = nil
	for _, a := range []*ArmResult{&r.Single, &r.Swarm} {
		a.CostPerAccepted = nil
		if a.CostKnown && a.Accepted > 0 {
			c := a.USD / float64(a.Accepted)
			a.CostPerAccepted = &c
		}
	}
	if r.Single.TokensKnown && r.Swarm.TokensKnown && r.Single.Tokens > 0 {
		a := float64(r.Swarm.Tokens) / float64(r.Single.Tokens)
		r.TokenAmplification = &a
	}
	r.CostKnown = r.Single.CostKnown && r.Swarm.CostKnown
	r.Verdict, r.Reasons = Compare(r.Single, r.Swarm)
}

// Compare decides whether the swarm dominates the single agent: no worse
// on any judged axis — quality (higher is better), time to the last
// integration and cost per accepted task (lower is better; none accepted
// counts as infinite cost) — and strictly better on at least one. Cost is
// judged only when both arms' costs are known; otherwise it is "n/a" and
// gives no verdict. Reasons say how each axis compared.
func Compare(single, sw ArmResult) (string, []string) {
	cost := func(a ArmResult) float64 {
		if a.CostPerAccepted == nil {
			return math.Inf(1)
		}
		return *a.CostPerAccepted
	}
	type axis struct {
		name          string
		single, swarm float64
		higherBetter  bool
		format        func(float64) string
	}
	axes := []axis{
		{"quality", single.Quality, sw.Quality, true, func(v float64) string { return fmt.Sprintf("%.2f", v) }},
		{"time to last integration", single.TimeS, sw.TimeS, false, func(v float64) string { return fmt.Sprintf("%.1fs", v) }},
	}
	noCost := ""
	if single.CostKnown && sw.CostKnown {
		axes = append(axes, axis{"cost per accepted task", cost(single), cost(sw), false, usd})
	} else {
		var why []string
		for _, a := range []ArmResult{single, sw} {
			if !a.CostKnown {
				note := a.CostNote
				if note == "" {
					note = "not metered"
				}
				why = append(why, string(a.Arm)+": "+note)
			}
		}
		noCost = "cost per accepted task: n/a, no verdict on this axis (" + strings.Join(why, "; ") + ")"
	}
	var reasons []string
	worse, better := 0, 0
	for _, a := range axes {
		var rel string
		switch {
		case a.swarm == a.single:
			rel = "ties"
		case (a.swarm > a.single) == a.higherBetter:
			rel = "better"
			better++
		default:
			rel = "worse"
			worse++
		}
		reasons = append(reasons, fmt.Sprintf("%s: swarm %s %s vs single %s", a.name, rel, a.format(a.swarm), a.format(a.single)))
	}
	if noCost != "" {
		reasons = append(reasons, noCost)
	}
	if worse == 0 && better > 0 {
		return VerdictSwarm, reasons
	}
	return VerdictSingle, reasons
}

func usd(v float64) string {
	if math.IsInf(v, 1) {
		return "n/a (none accepted)"
	}
	return fmt.Sprintf("$%.4f", v)
}
