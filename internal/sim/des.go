package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Mode is how a simulated swarm coordinates.
type Mode string

const (
	// ModeCentral: one scheduler process receives every message —
	// requests, completions and every agent's heartbeat — one at a time,
	// and hands out tasks critical-path first. It knows every assignment,
	// so it also acts as the shared index of utilities written so far.
	ModeCentral Mode = "central"
	// ModeSelf: agents claim ready tasks from a shared board. A claim goes
	// to the task's shard gatekeeper, which collects the claims arriving
	// within a window and grants the best-scoring one; losers pick again.
	// Leases (heartbeats) are spread over the shard gatekeepers. There is
	// no shared utility index unless SwarmParams.UtilityIndex is set.
	ModeSelf Mode = "self"
)

// SwarmParams are the inputs of the discrete-event swarm simulator.
// DefaultSwarmParams gives every field a documented default; JSON names
// match the flags of `apiary sim swarm` (with _ for -).
type SwarmParams struct {
	// Agents and Mode select one run; a sweep (SweepSwarm) sets them per
	// run and leaves them empty in its report's Params.
	Agents int    `json:"agents,omitempty"`
	Tasks  int    `json:"tasks"`
	Mode   Mode   `json:"mode,omitempty"`
	Seed   uint64 `json:"seed"`

	// Work: task durations are lognormal with this median and 90th
	// percentile; a task depends on one earlier task (among the 50 before
	// it) with probability DepProb.
	MedianS float64 `json:"median_s"`
	P90S    float64 `json:"p90_s"`
	DepProb float64 `json:"dep_prob"`

	// Coordination. Every message takes LatencyS to arrive; a coordination
	// server (the central scheduler, a shard gatekeeper) handles one
	// message at a time, CentralMsgS or GateMsgS each, in arrival order,
	// so it stalls (its queue grows without bound) once the offered load
	// passes 1. Every agent sends a heartbeat (a lease renewal) every
	// HeartbeatS seconds; 0 disables them.
	LatencyS     float64 `json:"latency_s"`
	HeartbeatS   float64 `json:"heartbeat_s"`
	CentralMsgS  float64 `json:"central_msg_s"`
	Shards       int     `json:"shards"`
	GateMsgS     float64 `json:"gate_msg_s"`
	ClaimWindowS float64 `json:"claim_window_s"`
	// ClaimSpread: an idle self-organizing agent claims one of the
	// ClaimSpread most critical ready tasks at random.
	ClaimSpread int `json:"claim_spread"`
	// IntegrateS is the merge role's time per integration (one at a time);
	// OverheadS is added to every attempt (worktree, envelope, start-up).
	IntegrateS float64 `json:"integrate_s"`
	OverheadS  float64 `json:"overhead_s"`

	// Merge conflicts: each task writes WriteSet distinct files out of
	// Files, drawn with Zipf exponent Zipf. A task conflicts when a file it
	// wrote was integrated by another task since its base; it then reworks
	// for ReworkFrac of its duration on the new head.
	Files      int     `json:"files"`
	WriteSet   int     `json:"write_set"`
	Zipf       float64 `json:"zipf"`
	ReworkFrac float64 `json:"rework_frac"`

	// Duplicate work: with probability UtilityProb a task needs one of
	// Utilities helpers (Zipf 1), which costs UtilityFrac of its duration
	// to write. An agent that cannot see an existing or in-flight copy
	// writes it again: a duplicate. Agents see what they wrote themselves
	// and, with an index, everything integrated.
	UtilityProb  float64 `json:"utility_prob"`
	Utilities    int     `json:"utilities"` // 0: tasks/10
	UtilityFrac  float64 `json:"utility_frac"`
	UtilityIndex bool    `json:"utility_index"` // self mode; central always has one

	// Tests: an attempt passes with probability PassRate ×
	// (1 − MismatchPenalty)^k, k the interface-changing integrations
	// (a task changes an interface with probability InterfaceProb) since
	// its base. A task gets MaxAttempts attempts; a failed task's
	// dependents are skipped.
	PassRate        float64 `json:"pass_rate"`
	InterfaceProb   float64 `json:"interface_prob"`
	MismatchPenalty float64 `json:"mismatch_penalty"`
	MaxAttempts     int     `json:"max_attempts"`

	// Tokens: an agent spends WorkTokensPerS while working; a message
	// costs MsgTokens, a heartbeat HeartbeatTokens.
	WorkTokensPerS  float64 `json:"work_tokens_per_s"`
	MsgTokens       float64 `json:"msg_tokens"`
	HeartbeatTokens float64 `json:"heartbeat_tokens"`
}

// DefaultSwarmParams returns the defaults of `apiary sim swarm`: 4,000
// tasks of median 120 s and p90 360 s; a central scheduler handling 125
// messages/s (so heartbeats every 5 s saturate it at 625 agents); 16
// gatekeeper shards; 5,000 files with Zipf 0.6 popularity and 3 files per
// task; 95% of attempts passing their tests before interface drift.
func DefaultSwarmParams() SwarmParams {
	return SwarmParams{
		Agents: 16, Tasks: 4000, Mode: ModeCentral, Seed: 1,
		MedianS: 120, P90S: 360, DepProb: 0.2,
		LatencyS: 0.05, HeartbeatS: 5, CentralMsgS: 0.008, Shards: 16, GateMsgS: 0.008,
		ClaimWindowS: 0.2, ClaimSpread: 64, IntegrateS: 0.1,
		Files: 5000, WriteSet: 3, Zipf: 0.6, ReworkFrac: 0.1,
		UtilityProb: 0.3, UtilityFrac: 0.2,
		PassRate: 0.95, InterfaceProb: 0.1, MismatchPenalty: 0.002, MaxAttempts: 3,
		WorkTokensPerS: 800, MsgTokens: 500, HeartbeatTokens: 50,
	}
}

// Limits of the simulator.
const (
	maxSimAgents = 100_000
	maxSimTasks  = 1_000_000
	maxSimFiles  = 10_000_000
	depWindow    = 50
	maxReworks   = 8
	// A run that has not finished after maxEvents events, or at a
	// simulated time of stallFactor times all its work done by one agent,
	// is reported as stalled.
	maxEvents   = 50_000_000
	stallFactor = 1000
)

// Validate checks every parameter and names the first bad one.
func (p *SwarmParams) Validate() error {
	ints := []struct {
		name   string
		v, lo  int
		hi     int
		wantHi string
	}{
		{"agents", p.Agents, 1, maxSimAgents, "100000"},
		{"tasks", p.Tasks, 1, maxSimTasks, "1000000"},
		{"shards", p.Shards, 1, maxSimAgents, "100000"},
		{"claim-spread", p.ClaimSpread, 1, maxSimTasks, "1000000"},
		{"files", p.Files, 1, maxSimFiles, "10000000"},
		{"write-set", p.WriteSet, 0, min(p.Files, 1000), "min(files, 1000)"},
		{"utilities", p.Utilities, 0, maxSimTasks, "1000000"},
		{"max-attempts", p.MaxAttempts, 1, 100, "100"},
	}
	for _, c := range ints {
		if c.v < c.lo || c.v > c.hi {
			return paramErr(c.name, c.v, fmt.Sprintf("in [%d, %s]", c.lo, c.wantHi))
		}
	}
	if p.Mode != ModeCentral && p.Mode != ModeSelf {
		return paramErr("mode", p.Mode, "central or self")
	}
	if !(p.MedianS > 0 && p.MedianS <= 1e9) {
		return paramErr("median-s", p.MedianS, "in (0, 1e9]")
	}
	if !(p.P90S >= p.MedianS && p.P90S <= 1e3*p.MedianS) {
		return paramErr("p90-s", p.P90S, "in [median, 1000 × median]")
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"dep-prob", p.DepProb}, {"utility-prob", p.UtilityProb}, {"pass-rate", p.PassRate},
		{"interface-prob", p.InterfaceProb}, {"mismatch-penalty", p.MismatchPenalty}} {
		if err := checkProb(c.name, c.v); err != nil {
			return err
		}
	}
	if p.PassRate == 0 {
		return paramErr("pass-rate", p.PassRate, "> 0")
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"latency-s", p.LatencyS}, {"heartbeat-s", p.HeartbeatS}, {"central-msg-s", p.CentralMsgS},
		{"gate-msg-s", p.GateMsgS}, {"claim-window-s", p.ClaimWindowS}, {"integrate-s", p.IntegrateS},
		{"overhead-s", p.OverheadS}, {"zipf", p.Zipf}, {"rework-frac", p.ReworkFrac}, {"utility-frac", p.UtilityFrac},
		{"work-tokens-per-s", p.WorkTokensPerS}, {"msg-tokens", p.MsgTokens}, {"heartbeat-tokens", p.HeartbeatTokens}} {
		if err := checkNonNeg(c.name, c.v); err != nil {
			return err
		}
	}
	if p.HeartbeatS > 0 && p.HeartbeatS < 1e-3 {
		return paramErr("heartbeat-s", p.HeartbeatS, "0 (none) or >= 0.001")
	}
	if p.Zipf > 20 {
		return paramErr("zipf", p.Zipf, "in [0, 20]")
	}
	if p.ReworkFrac > 10 || p.UtilityFrac > 10 {
		return paramErr("rework-frac", max(p.ReworkFrac, p.UtilityFrac), "at most 10 (and so utility-frac)")
	}
	return nil
}

// SwarmResult is one simulated run: one agent count in one mode.
type SwarmResult struct {
	Mode   Mode `json:"mode"`
	Agents int  `json:"agents"`
	Tasks  int  `json:"tasks"`
	// MakespanS is the simulated time until the last task was integrated,
	// failed or skipped (or, if Stalled, when the simulation gave up).
	MakespanS float64 `json:"makespan_s"`
	Completed int     `json:"completed"` // integrated with passing tests
	Failed    int     `json:"failed"`    // out of attempts
	Skipped   int     `json:"skipped"`   // a dependency failed
	Stalled   bool    `json:"stalled"`
	// EffectiveWorkS is the work of integrated tasks (their durations, and
	// the first copy of each utility); BusyWorkS is all the time agents
	// worked, rework, duplicates and failed attempts included.
	EffectiveWorkS float64 `json:"effective_work_s"`
	BusyWorkS      float64 `json:"busy_work_s"`
	Conflicts      int     `json:"conflicts"`
	Duplicates     int     `json:"duplicates"`
	TestFailures   int     `json:"test_failures"`
	// ClaimCollisions counts claims that lost to another claim (self).
	ClaimCollisions int     `json:"claim_collisions"`
	Messages        int64   `json:"messages"` // heartbeats included
	Heartbeats      int64   `json:"heartbeats"`
	MessagesPerTask float64 `json:"messages_per_task"`
	WorkTokens      float64 `json:"work_tokens"`
	CoordTokens     float64 `json:"coordination_tokens"`
	// CoordShare is CoordTokens / (CoordTokens + WorkTokens).
	CoordShare float64 `json:"coordination_share"`
	// CoordLoad is the busiest coordination server's offered load (its
	// service demand over the makespan); >= 1 means it was saturated.
	CoordLoad float64 `json:"coordinator_load"`
	// MergeLoad is the merge role's offered load.
	MergeLoad     float64 `json:"merge_load"`
	MaxQueueWaitS float64 `json:"max_queue_wait_s"`
	// WorkS and CriticalPathS are the total and the longest dependency
	// chain of the durations of the tasks that ran: the makespan is at
	// least max(CriticalPathS, WorkS/Agents).
	WorkS         float64 `json:"work_s"`
	CriticalPathS float64 `json:"critical_path_s"`
	Events        int64   `json:"events"`
}

// Workload is the tasks of a simulation: Durations[i] is task i's work in
// seconds and Deps[i] the earlier tasks (indices < i) it needs.
type Workload struct {
	Durations []float64
	Deps      [][]int32
}

// ErrWorkload is matched by the errors of SimulateWorkload about its
// workload.
var ErrWorkload = errors.New("sim: bad workload")

func (w *Workload) validate() error {
	if len(w.Durations) == 0 || len(w.Durations) > maxSimTasks {
		return fmt.Errorf("%w: want 1 to %d tasks, got %d", ErrWorkload, maxSimTasks, len(w.Durations))
	}
	if w.Deps != nil && len(w.Deps) != len(w.Durations) {
		return fmt.Errorf("%w: %d dependency lists for %d tasks", ErrWorkload, len(w.Deps), len(w.Durations))
	}
	for i, d := range w.Durations {
		if !(d >= 0 && d <= 1e12) {
			return fmt.Errorf("%w: task %d: duration %g", ErrWorkload, i, d)
		}
		if w.Deps == nil {
			continue
		}
		for _, j := range w.Deps[i] {
			if j < 0 || int(j) >= i {
				return fmt.Errorf("%w: task %d depends on %d, not an earlier task", ErrWorkload, i, j)
			}
		}
	}
	return nil
}

// SimulateSwarm runs one simulation with a workload drawn from p (the
// same workload for every agent count and mode with the same seed and
// work parameters). It is deterministic for p.
func SimulateSwarm(p SwarmParams) (SwarmResult, error) {
	if err := p.Validate(); err != nil {
		return SwarmResult{}, err
	}
	return simulate(p, generateWorkload(p)), nil
}

// SimulateWorkload runs one simulation of a given workload (p.Tasks,
// MedianS, P90S and DepProb are ignored); the other per-task draws (write
// sets, utilities, interfaces, test outcomes) come from p.Seed.
func SimulateWorkload(p SwarmParams, w Workload) (SwarmResult, error) {
	if err := w.validate(); err != nil {
		return SwarmResult{}, err
	}
	p.Tasks = len(w.Durations)
	if err := p.Validate(); err != nil {
		return SwarmResult{}, err
	}
	return simulate(p, attachDraws(p, w)), nil
}

// SwarmReport is the answer of `apiary sim swarm`: the agent counts and
// modes swept, the shared parameters (Params.Agents and Params.Mode are
// empty: each result names its own) and one result per agent count and
// mode.
type SwarmReport struct {
	Agents  []int         `json:"agents"`
	Modes   []Mode        `json:"modes"`
	Params  SwarmParams   `json:"params"`
	Results []SwarmResult `json:"results"`
	// Warnings are for people: the parameters' caveats (a calibration
	// departed from, say). The caller fills them in.
	Warnings []string `json:"warnings,omitempty"`
}

// SweepSwarm simulates p for every agent count in agents and every mode
// in modes, in that order (agent counts ascending, modes as given).
func SweepSwarm(p SwarmParams, agents []int, modes []Mode) (*SwarmReport, error) {
	if len(agents) == 0 || len(modes) == 0 {
		return nil, paramErr("agents", len(agents), "at least one agent count and mode")
	}
	agents = slices.Clone(agents)
	slices.Sort(agents)
	agents = slices.Compact(agents)
	rep := &SwarmReport{Agents: agents, Modes: slices.Clone(modes), Params: p}
	rep.Params.Agents, rep.Params.Mode = 0, ""
	for _, a := range agents {
		for _, m := range modes {
			q := p
			q.Agents, q.Mode = a, m
			if err := q.Validate(); err != nil {
				return nil, err
			}
			rep.Results = append(rep.Results, simulate(q, generateWorkload(q)))
		}
	}
	return rep, nil
}

// lognormalSigma is σ of a lognormal with the given median and 90th
// percentile.
func lognormalSigma(median, p90 float64) float64 {
	const z90 = 1.2815515655446004 // Φ⁻¹(0.9)
	return math.Log(p90/median) / z90
}
