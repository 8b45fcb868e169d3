package sim

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// RegisterFlags declares a flag for every model parameter of p (all but
// Agents and Mode, which a sweep sets), bound to p's fields, with p's
// current values as defaults. Flag names are the JSON names with - for _.
func (p *SwarmParams) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&p.Tasks, "tasks", p.Tasks, "number of tasks `N`")
	fs.Uint64Var(&p.Seed, "seed", p.Seed, "random `seed`; a seed fixes the workload and every draw")
	f := func(v *float64, name, usage string) { fs.Float64Var(v, name, *v, usage) }
	i := func(v *int, name, usage string) { fs.IntVar(v, name, *v, usage) }
	f(&p.MedianS, "median-s", "median task duration in `seconds` (lognormal)")
	f(&p.P90S, "p90-s", "90th percentile of task durations in `seconds`")
	f(&p.DepProb, "dep-prob", "probability that a task depends on an earlier one")
	f(&p.LatencyS, "latency-s", "one-way message latency in `seconds`")
	f(&p.HeartbeatS, "heartbeat-s", "heartbeat (lease renewal) period per agent in `seconds`; 0: none")
	f(&p.CentralMsgS, "central-msg-s", "central scheduler's time per message in `seconds`")
	i(&p.Shards, "shards", "self-organizing: number of gatekeeper shards")
	f(&p.GateMsgS, "gate-msg-s", "self-organizing: a gatekeeper's time per message in `seconds`")
	f(&p.ClaimWindowS, "claim-window-s", "self-organizing: how long a gatekeeper collects claims on a task, `seconds`")
	i(&p.ClaimSpread, "claim-spread", "self-organizing: an agent claims one of the `K` most critical ready tasks")
	f(&p.IntegrateS, "integrate-s", "merge role's time per integration in `seconds` (one at a time)")
	f(&p.OverheadS, "overhead-s", "fixed `seconds` added to every attempt (worktree, start-up)")
	i(&p.Files, "files", "files in the repository")
	i(&p.WriteSet, "write-set", "files each task writes")
	f(&p.Zipf, "zipf", "Zipf exponent of file popularity")
	f(&p.ReworkFrac, "rework-frac", "rework after a merge conflict, as a `fraction` of the task")
	f(&p.UtilityProb, "utility-prob", "probability that a task needs a shared utility")
	i(&p.Utilities, "utilities", "number of distinct utilities (0: tasks/10)")
	f(&p.UtilityFrac, "utility-frac", "cost of writing a utility, as a `fraction` of the task")
	fs.BoolVar(&p.UtilityIndex, "utility-index", p.UtilityIndex, "self-organizing: agents share an index of integrated utilities")
	f(&p.PassRate, "pass-rate", "probability that an attempt passes its tests without interface drift")
	f(&p.InterfaceProb, "interface-prob", "probability that a task changes an interface")
	f(&p.MismatchPenalty, "mismatch-penalty", "drop in pass probability per interface change since an attempt's base")
	i(&p.MaxAttempts, "max-attempts", "attempts per task before it fails")
	f(&p.WorkTokensPerS, "work-tokens-per-s", "tokens an agent spends per second of work")
	f(&p.MsgTokens, "msg-tokens", "tokens per coordination message")
	f(&p.HeartbeatTokens, "heartbeat-tokens", "tokens per heartbeat")
}

// ErrParamsFile is matched by the errors of ParseParams.
var ErrParamsFile = fmt.Errorf("%w: parameters file", ErrInvalid)

// ParseParams reads SwarmParams from JSON (the "params" of `apiary sim
// swarm --json` or of `apiary sim calibrate --json`, or the object
// itself) over base: fields it does not name keep base's values; a field
// SwarmParams does not have is an error.
func ParseParams(data []byte, base SwarmParams) (SwarmParams, error) {
	var wrap struct {
		Params *json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(data, &wrap); err != nil {
		return base, fmt.Errorf("%w: %v", ErrParamsFile, err)
	}
	if wrap.Params != nil {
		data = *wrap.Params
	}
	p := base
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return base, fmt.Errorf("%w: %v", ErrParamsFile, err)
	}
	if dec.More() {
		return base, fmt.Errorf("%w: trailing data after the parameters", ErrParamsFile)
	}
	return p, nil
}

// ParseAgents reads a list of agent counts: "16,64,256", or with "..."
// continuing the progression of the two values before it up to the value
// after it: "16,32,...,1024" doubles, "10,20,...,60" adds 10.
func ParseAgents(s string) ([]int, error) {
	bad := func(why string) error { return paramErr("agents", strconv.Quote(s), why) }
	parts := strings.Split(s, ",")
	var out []int
	for i := 0; i < len(parts); i++ {
		t := strings.TrimSpace(parts[i])
		if t != "..." {
			v, err := strconv.Atoi(t)
			if err != nil || v < 1 || v > maxSimAgents {
				return nil, bad("a comma-separated list of counts in [1, 100000]")
			}
			out = append(out, v)
			continue
		}
		if len(out) < 2 || i+1 >= len(parts) {
			return nil, bad("two counts before \"...\" and one after")
		}
		end, err := strconv.Atoi(strings.TrimSpace(parts[i+1]))
		a, b := out[len(out)-2], out[len(out)-1]
		if err != nil || end < b || end > maxSimAgents || b <= a {
			return nil, bad("an increasing progression around \"...\"")
		}
		// Geometric when the ratio is whole and reaches the end exactly
		// (16,32,...,1024), else arithmetic (10,20,...,50).
		next := func(v int) int { return v + b - a }
		if r := b / a; b%a == 0 && r > 1 {
			v := b
			for v < end {
				v *= r
			}
			if v == end {
				next = func(v int) int { return v * r }
			}
		}
		for v := next(b); v < end; v = next(v) {
			out = append(out, v)
			if len(out) > 1000 {
				return nil, bad("at most 1000 counts")
			}
		}
	}
	if len(out) == 0 || len(out) > 1000 {
		return nil, bad("1 to 1000 counts")
	}
	return out, nil
}
