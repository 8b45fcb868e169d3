package sim

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestCalibrationConditions: a calibration on benchmark rows records that
// its costs were fitted with merges and tests off; its own parameters,
// fed back as they are, depart from that — and it matters — while the
// settings it names reproduce what it simulated.
func TestCalibrationConditions(t *testing.T) {
	t.Parallel()
	truth := DefaultSwarmParams()
	truth.Tasks, truth.MedianS, truth.P90S = 300, 2, 6
	truth.CentralMsgS, truth.GateMsgS, truth.HeartbeatS = 0.004, 0.02, 1
	truth = benchParams(truth, Measurement{Agents: 1, Mode: ModeCentral, Tasks: truth.Tasks})
	ms, err := ParseReport("bench.json", benchDoc(t, truth, []int{8, 64}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Calibrate(ms, DefaultSwarmParams())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Conditions) != 1 {
		t.Fatalf("conditions %+v, want one for the benchmark rows", c.Conditions)
	}
	cond := c.Conditions[0]
	for _, name := range []string{"central_msg_s", "gate_msg_s", "latency_s"} {
		if !slices.Contains(cond.Fitted, name) {
			t.Errorf("condition %+v does not name %s", cond, name)
		}
	}
	// What the fit simulated keeps the condition, by construction of
	// benchParams from the same settings.
	if dev := cond.Deviations(benchParams(c.Params, ms[0])); len(dev) != 0 {
		t.Errorf("the fit's own simulation departs from its condition: %+v", dev)
	}
	// The calibrated parameters as written keep the defaults' merges and
	// tests: every forced setting departs.
	dev := cond.Deviations(c.Params)
	var names []string
	for _, d := range dev {
		names = append(names, d.Name)
	}
	if want := []string{"integrate_s", "write_set", "utility_prob", "interface_prob", "pass_rate", "mismatch_penalty", "max_attempts"}; !slices.Equal(names, want) {
		t.Errorf("deviations %v, want %v", names, want)
	}
	w := cond.Warning(c.Params)
	for _, s := range []string{"central_msg_s", "write_set 0", "write_set 3", "merge conflicts", "failing tests", "--write-set 0", "--pass-rate 1"} {
		if !strings.Contains(w, s) {
			t.Errorf("warning %q does not say %q", w, s)
		}
	}
	// It matters: the same sweep with the condition's settings is
	// another simulation.
	c.Params.Tasks = 500
	as := c.Params
	as.apply(cond.Settings)
	if cond.Warning(as) != "" {
		t.Errorf("warning for the settings the condition names: %s", cond.Warning(as))
	}
	on, err := SweepSwarm(c.Params, []int{64}, []Mode{ModeSelf})
	if err != nil {
		t.Fatal(err)
	}
	off, err := SweepSwarm(as, []int{64}, []Mode{ModeSelf})
	if err != nil {
		t.Fatal(err)
	}
	if !(on.Results[0].MakespanS > off.Results[0].MakespanS) || on.Results[0].Conflicts == 0 || off.Results[0].Conflicts != 0 {
		t.Errorf("merges and tests on: %+v; as fitted: %+v", on.Results[0], off.Results[0])
	}
	t.Logf("self, 64 agents, %d tasks: %.0f s as written, %.0f s as fitted", c.Params.Tasks, on.Results[0].MakespanS, off.Results[0].MakespanS)

	// The conditions travel with the calibration's JSON, and an older
	// calibration without them gets them from its "fitted" list.
	doc, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := ParseParamsFile(doc, DefaultSwarmParams())
	if err != nil || len(got) != 1 || !slices.Equal(got[0].Fitted, cond.Fitted) || !slices.Equal(got[0].Settings, cond.Settings) {
		t.Fatalf("ParseParamsFile: %+v, %v", got, err)
	}
	var old map[string]json.RawMessage
	if err := json.Unmarshal(doc, &old); err != nil {
		t.Fatal(err)
	}
	delete(old, "conditions")
	doc, _ = json.Marshal(old)
	if _, got, err = ParseParamsFile(doc, DefaultSwarmParams()); err != nil || len(got) != 1 || !slices.Equal(got[0].Fitted, cond.Fitted) {
		t.Fatalf("ParseParamsFile without conditions: %+v, %v", got, err)
	}
	if _, got, err = ParseParamsFile([]byte(`{"median_s": 3, "p90_s": 9}`), DefaultSwarmParams()); err != nil || got != nil {
		t.Fatalf("plain parameters: %+v, %v", got, err)
	}
}

// TestRunConditions: a calibration on runs fits the overhead on replays
// without message costs, merges or tests, and says so.
func TestRunConditions(t *testing.T) {
	t.Parallel()
	m := Measurement{Source: "run", Kind: "run", Mode: ModeCentral, Agents: 2, Tasks: 4, Durations: []float64{10, 20, 5, 8},
		Deps: [][]int32{nil, {0}, nil, {2}}, Attempts: 4, MakespanS: 40}
	c, err := Calibrate([]Measurement{m}, DefaultSwarmParams())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(c.Conditions, func(fc FitCondition) bool { return slices.Contains(fc.Fitted, "overhead_s") })
	if i < 0 {
		t.Fatalf("conditions %+v name no overhead_s", c.Conditions)
	}
	cond := c.Conditions[i]
	if dev := cond.Deviations(runParams(c.Params, m)); len(dev) != 0 {
		t.Errorf("the replay departs from its condition: %+v", dev)
	}
	if w := cond.Warning(c.Params); !strings.Contains(w, "heartbeat_s 0") || !strings.Contains(w, "message costs") {
		t.Errorf("warning %q", w)
	}
}
