package sim

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// FitCondition records settings a calibration's simulations forced while
// they fitted some parameters: benchmark rows are simulated as
// coordination alone, run replays as their own measured task times on an
// in-process scheduler. A simulation that does not keep those settings
// simulates, with the fitted values, something the fit never saw (merges
// and tests on top of per-message costs fitted without them, say).
type FitCondition struct {
	Fitted   []string  `json:"fitted"`
	Under    string    `json:"under"`
	Settings []Setting `json:"settings"`
}

// Setting is one parameter's value, by its JSON name.
type Setting struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Deviation is a setting a simulation does not keep.
type Deviation struct {
	Name   string
	Fitted float64 // the value the fit simulated with
	Now    float64 // the value of the simulation at hand
}

// What each forced setting leaves out of a simulation, in words.
var settingEffect = map[string]string{
	"integrate_s":      "merge time",
	"write_set":        "merge conflicts",
	"utility_prob":     "duplicate work",
	"interface_prob":   "interface drift",
	"mismatch_penalty": "interface drift",
	"pass_rate":        "failing tests",
	"max_attempts":     "retries",
	"heartbeat_s":      "heartbeats",
	"central_msg_s":    "message costs",
	"latency_s":        "message latency",
}

// benchSettings and runSettings are what benchParams and simulateRun
// force; conditions names them for the calibration's output.
var (
	benchSettings = []Setting{{"integrate_s", 0}, {"write_set", 0}, {"utility_prob", 0}, {"interface_prob", 0},
		{"pass_rate", 1}, {"mismatch_penalty", 0}, {"max_attempts", 1}}
	runSettings = []Setting{{"heartbeat_s", 0}, {"central_msg_s", 0}, {"latency_s", 0}, {"integrate_s", 0},
		{"pass_rate", 1}, {"max_attempts", 1}, {"write_set", 0}, {"utility_prob", 0}, {"interface_prob", 0}}
)

// conditions derives the fit conditions from what a calibration fitted
// (by simulation: the benchmark knobs and the runs' overhead).
func conditions(fitted []FittedParam) []FitCondition {
	var bench, runs []string
	for _, f := range fitted {
		switch {
		case f.Name == "overhead_s":
			runs = append(runs, f.Name)
		case strings.Contains(f.From, "times to drain") || f.Name == "p90_s" && strings.HasPrefix(f.From, "median_s"):
			bench = append(bench, f.Name)
		}
	}
	var out []FitCondition
	if len(bench) > 0 {
		out = append(out, FitCondition{Fitted: bench, Under: "benchmark rows simulated as coordination alone", Settings: benchSettings})
	}
	if len(runs) > 0 {
		out = append(out, FitCondition{Fitted: runs, Under: "run replays of measured task times", Settings: runSettings})
	}
	return out
}

// setting returns the field of p with the JSON name name: a float64 or an
// int field, or neither for a name that is not a forced setting.
func (p *SwarmParams) setting(name string) (*float64, *int) {
	switch name {
	case "integrate_s":
		return &p.IntegrateS, nil
	case "write_set":
		return nil, &p.WriteSet
	case "utility_prob":
		return &p.UtilityProb, nil
	case "interface_prob":
		return &p.InterfaceProb, nil
	case "mismatch_penalty":
		return &p.MismatchPenalty, nil
	case "pass_rate":
		return &p.PassRate, nil
	case "max_attempts":
		return nil, &p.MaxAttempts
	case "heartbeat_s":
		return &p.HeartbeatS, nil
	case "central_msg_s":
		return &p.CentralMsgS, nil
	case "latency_s":
		return &p.LatencyS, nil
	}
	return nil, nil
}

// value returns the setting name of p.
func (p *SwarmParams) value(name string) (float64, bool) {
	switch f, i := p.setting(name); {
	case f != nil:
		return *f, true
	case i != nil:
		return float64(*i), true
	}
	return 0, false
}

// apply sets each of settings in p.
func (p *SwarmParams) apply(settings []Setting) {
	for _, s := range settings {
		switch f, i := p.setting(s.Name); {
		case f != nil:
			*f = s.Value
		case i != nil:
			*i = int(s.Value)
		}
	}
}

// Deviations returns the settings of c that p does not keep, in c's
// order. A parameter the condition itself fitted is not a deviation.
func (c FitCondition) Deviations(p SwarmParams) []Deviation {
	var out []Deviation
	for _, s := range c.Settings {
		if slices.Contains(c.Fitted, s.Name) {
			continue
		}
		if v, ok := p.value(s.Name); ok && v != s.Value {
			out = append(out, Deviation{Name: s.Name, Fitted: s.Value, Now: v})
		}
	}
	return out
}

// Warning renders the deviations of p from c for people, "" if none: what
// was fitted under which settings, what this simulation adds, and the
// flags that simulate as fitted.
func (c FitCondition) Warning(p SwarmParams) string {
	dev := c.Deviations(p)
	if len(dev) == 0 {
		return ""
	}
	var was, now, flags, effects []string
	for _, d := range dev {
		was = append(was, fmt.Sprintf("%s %g", d.Name, d.Fitted))
		now = append(now, fmt.Sprintf("%s %g", d.Name, d.Now))
		flags = append(flags, fmt.Sprintf("--%s %g", strings.ReplaceAll(d.Name, "_", "-"), d.Fitted))
		if e := settingEffect[d.Name]; !slices.Contains(effects, e) {
			effects = append(effects, e)
		}
	}
	return fmt.Sprintf("%s were fitted on %s (%s); this simulation has %s: it adds %s, which the fit never saw; to simulate as fitted, add %s",
		strings.Join(c.Fitted, ", "), c.Under, strings.Join(was, ", "), strings.Join(now, ", "),
		strings.Join(effects, ", "), strings.Join(flags, " "))
}

// ParseParamsFile is ParseParams that also returns the fit conditions of a
// calibration's output: its "conditions", or for output written before
// they were recorded, those its "fitted" list implies. Other files have
// none.
func ParseParamsFile(data []byte, base SwarmParams) (SwarmParams, []FitCondition, error) {
	p, err := ParseParams(data, base)
	if err != nil {
		return p, nil, err
	}
	var cal struct {
		Fitted     []FittedParam   `json:"fitted"`
		Conditions *[]FitCondition `json:"conditions"`
	}
	if err := json.Unmarshal(data, &cal); err != nil {
		return base, nil, fmt.Errorf("%w: %v", ErrParamsFile, err)
	}
	if cal.Conditions != nil {
		return p, *cal.Conditions, nil
	}
	return p, conditions(cal.Fitted), nil
}
