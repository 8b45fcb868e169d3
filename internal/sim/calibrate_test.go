package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

// runReport is a finished run as `apiary run --json` prints it (trimmed):
// the demo's six tasks, cmd depending on mul and sub.
const runReport = `{
  "run_id": "20261130-101010-abcdef",
  "status": "failed",
  "tasks": [
    {"id": "mul", "status": "succeeded", "attempts": 1, "gate": null, "wall_s": 30},
    {"id": "sub", "status": "succeeded", "attempts": 1, "gate": null, "wall_s": 32},
    {"id": "usage-doc", "status": "succeeded", "attempts": 1, "gate": null, "wall_s": 20},
    {"id": "contrib-doc", "status": "succeeded", "attempts": 1, "gate": null, "wall_s": 41, "reconciliations": 1},
    {"id": "tidy-tests", "status": "failed", "attempts": 1, "gate": {"gate": "forbidden"}, "wall_s": 15},
    {"id": "cmd", "status": "succeeded", "attempts": 1, "gate": null, "wall_s": 30}
  ],
  "predicted_critical_path": {"tasks": ["sub", "cmd"], "seconds": 60},
  "wall_s": 75
}`

func TestParseRunReport(t *testing.T) {
	t.Parallel()
	ms, err := ParseReport("r.json", []byte(runReport))
	if err != nil || len(ms) != 1 {
		t.Fatalf("ParseReport: %v, %v", ms, err)
	}
	m := ms[0]
	if m.Kind != "run" || m.Mode != ModeCentral || m.Tasks != 6 || m.MakespanS != 75 || m.Attempts != 6 || m.Rejections != 1 || m.Reconciliations != 1 {
		t.Fatalf("measurement %+v", m)
	}
	// No max_parallel: the average parallelism (168 s of tasks in 75 s).
	if m.Agents != 2 || !m.AgentsInferred {
		t.Errorf("agents %d (inferred %v), want 2 inferred", m.Agents, m.AgentsInferred)
	}
	// The predicted critical path orders cmd after sub.
	pos := map[float64]int{}
	for i, d := range m.Durations {
		pos[d] = i
	}
	cmd := len(m.Durations) - 1
	if m.Durations[cmd] != 30 || len(m.Deps[cmd]) != 1 || m.Durations[m.Deps[cmd][0]] != 32 {
		t.Errorf("durations %v deps %v: want cmd (30 s) last, after sub (32 s)", m.Durations, m.Deps)
	}

	// With max_parallel and deps, as the CLI writes for a run directory,
	// and wrapped as the demo prints it.
	var doc map[string]any
	if err := json.Unmarshal([]byte(runReport), &doc); err != nil {
		t.Fatal(err)
	}
	for _, x := range doc["tasks"].([]any) {
		if task := x.(map[string]any); task["id"] == "cmd" {
			task["deps"] = []string{"mul", "sub", "usage-doc"}
		}
	}
	wrapped, _ := json.Marshal(map[string]any{"dir": "/tmp/x", "report": doc, "max_parallel": 5})
	ms, err = ParseReport("demo.json", wrapped)
	if err != nil {
		t.Fatal(err)
	}
	if m := ms[0]; m.Agents != 5 || m.AgentsInferred || len(m.Deps[len(m.Deps)-1]) != 3 {
		t.Errorf("wrapped report: agents %d (inferred %v), deps %v", m.Agents, m.AgentsInferred, m.Deps)
	}
}

func TestParseBenchReport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc string
		want      []Measurement
	}{
		{"array", `[{"agents": 16, "mode": "central", "tasks": 4000, "drain_s": 12.5, "messages_per_task": 3.2},
		            {"workers": 32, "mode": "self-organizing", "tasks": 4000, "time_to_drain": 6500000000, "board": "etcd"}]`,
			[]Measurement{{Agents: 16, Mode: ModeCentral, Tasks: 4000, MakespanS: 12.5, MessagesPerTask: 3.2},
				{Agents: 32, Mode: ModeSelf, Tasks: 4000, MakespanS: 6.5}}},
		{"results", `{"results": [{"agents": 8, "mode": "claims", "tasks": 10, "makespan_ms": 1500, "work_median_s": 0.2, "work_p90_s": 0.1}]}`,
			[]Measurement{{Agents: 8, Mode: ModeSelf, Tasks: 10, MakespanS: 1.5, MedianS: 0.2, P90S: 0.2}}},
		{"rows", `{"rows": [{"agents": 1, "mode": "CENTRAL", "tasks": 1, "seconds": 3}]}`,
			[]Measurement{{Agents: 1, Mode: ModeCentral, Tasks: 1, MakespanS: 3}}},
	}
	for _, tt := range tests {
		ms, err := ParseReport("b.json", []byte(tt.doc))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if len(ms) != len(tt.want) {
			t.Fatalf("%s: %d rows", tt.name, len(ms))
		}
		for i, m := range ms {
			w := tt.want[i]
			if m.Kind != "bench" || m.Agents != w.Agents || m.Mode != w.Mode || m.Tasks != w.Tasks || math.Abs(m.MakespanS-w.MakespanS) > 1e-9 ||
				m.MessagesPerTask != w.MessagesPerTask || m.MedianS != w.MedianS || m.P90S != w.P90S {
				t.Errorf("%s row %d: %+v, want %+v", tt.name, i, m, w)
			}
		}
	}
}

func TestParseReportErrors(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"not json":        `{`,
		"neither":         `{"foo": 1}`,
		"running":         strings.Replace(runReport, `"failed",`+"\n  \"tasks\"", `"running",`+"\n  \"tasks\"", 1),
		"no wall":         `{"run_id": "x", "status": "succeeded", "tasks": [{"id": "a", "status": "succeeded", "wall_s": 1}], "wall_s": 0}`,
		"dup id":          `{"run_id": "x", "status": "succeeded", "tasks": [{"id": "a", "status": "succeeded"}, {"id": "a", "status": "succeeded"}], "wall_s": 1}`,
		"unknown dep":     `{"run_id": "x", "status": "succeeded", "tasks": [{"id": "a", "status": "succeeded", "deps": ["b"]}], "wall_s": 1}`,
		"cycle":           `{"run_id": "x", "status": "succeeded", "tasks": [{"id": "a", "status": "succeeded", "deps": ["b"]}, {"id": "b", "status": "succeeded", "deps": ["a"]}], "wall_s": 1}`,
		"none ran":        `{"run_id": "x", "status": "failed", "tasks": [{"id": "a", "status": "skipped"}], "wall_s": 1}`,
		"negative wall":   `{"run_id": "x", "status": "succeeded", "tasks": [{"id": "a", "status": "succeeded", "wall_s": -1}], "wall_s": 1}`,
		"bad parallel":    `{"report": {"run_id": "x"}, "max_parallel": "four"}`,
		"empty rows":      `[]`,
		"row no agents":   `[{"mode": "central", "tasks": 1, "drain_s": 1}]`,
		"row bad mode":    `[{"agents": 1, "mode": "mesh", "tasks": 1, "drain_s": 1}]`,
		"row no time":     `[{"agents": 1, "mode": "self", "tasks": 1}]`,
		"row frac agents": `[{"agents": 1.5, "mode": "self", "tasks": 1, "drain_s": 1}]`,
		"row string time": `[{"agents": 1, "mode": "self", "tasks": 1, "drain_s": "1"}]`,
		"row wild p90":    `[{"agents": 1, "mode": "self", "tasks": 1, "drain_s": 1, "work_median_s": 1, "work_p90_s": 1e9}]`,
	}
	for name, doc := range bad {
		if _, err := ParseReport("x.json", []byte(doc)); !errors.Is(err, ErrReport) {
			t.Errorf("%s: err %v, want ErrReport", name, err)
		}
	}
}

// benchDoc simulates a benchmark with p and returns it as a report.
func benchDoc(t *testing.T, p SwarmParams, agents []int) []byte {
	t.Helper()
	rep, err := SweepSwarm(p, agents, []Mode{ModeCentral, ModeSelf})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCalibrateRecoversBench: a benchmark produced by the simulator with
// known coordination costs is fitted back to them, makespans within a few
// percent.
func TestCalibrateRecoversBench(t *testing.T) {
	t.Parallel()
	truth := DefaultSwarmParams()
	truth.Tasks, truth.MedianS, truth.P90S = 400, 2, 6
	truth.CentralMsgS, truth.GateMsgS, truth.HeartbeatS = 0.004, 0.02, 1
	// A benchmark measures coordination alone: no merges, no tests.
	truth = benchParams(truth, Measurement{Agents: 1, Mode: ModeCentral, Tasks: truth.Tasks})
	ms, err := ParseReport("bench.json", benchDoc(t, truth, []int{8, 32, 128, 256}))
	if err != nil {
		t.Fatal(err)
	}
	base := DefaultSwarmParams() // wrong coordination costs and work
	base.HeartbeatS = 1
	c, err := Calibrate(ms, base)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range c.Fitted {
		got[f.Name] = f.Value
	}
	if len(c.Rows) != 8 || c.MeanAbsErrorPct > 6 {
		t.Errorf("%d rows, mean abs error %.2f%%", len(c.Rows), c.MeanAbsErrorPct)
	}
	// The coordinators' costs show in how drain times scale with agents
	// and are recovered; the work's median and the message latency both
	// lengthen every task alike, so only their effect is pinned (above).
	if _, ok := got["latency_s"]; !ok || got["median_s"] <= 0 {
		t.Errorf("fitted: %+v", c.Fitted)
	}
	for name, want := range map[string]float64{"central_msg_s": 0.004, "gate_msg_s": 0.02} {
		if v := got[name]; math.Abs(v-want)/want > 0.25 {
			t.Errorf("fitted %s = %g, want about %g (fitted: %+v)", name, v, want, c.Fitted)
		}
	}
	var out bytes.Buffer
	if err := c.WriteText(&out); err != nil || !strings.Contains(out.String(), "mean absolute error") {
		t.Errorf("WriteText: %v\n%s", err, out.String())
	}
}

// TestCalibrateRuns: run reports whose makespans are their replay plus a
// known per-task overhead are fitted back to that overhead.
func TestCalibrateRuns(t *testing.T) {
	t.Parallel()
	base := DefaultSwarmParams()
	var ms []Measurement
	for i, walls := range [][]float64{{30, 32, 20, 41, 15, 30}, {10, 50, 5, 5, 5, 5, 20, 8}, {100, 3, 60}} {
		m := Measurement{Source: "run", Kind: "run", Mode: ModeCentral, Agents: 2 + i, Tasks: len(walls), Durations: walls,
			Deps: make([][]int32, len(walls)), Attempts: len(walls)}
		m.Deps[len(walls)-1] = []int32{0}
		q := base
		q.OverheadS = 4
		m.MakespanS = simulateRun(q, m)
		ms = append(ms, m)
	}
	ms[0].Rejections = 1
	c, err := Calibrate(ms, base)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(c.Params.OverheadS-4) > 0.05 || c.MeanAbsErrorPct > 0.5 {
		t.Errorf("overhead %g (want 4), mean abs error %.2f%%", c.Params.OverheadS, c.MeanAbsErrorPct)
	}
	if want := 1 - 1.0/17; math.Abs(c.Params.PassRate-want) > 1e-9 {
		t.Errorf("pass rate %g, want %g", c.Params.PassRate, want)
	}
	if c.Params.MedianS != quantile([]float64{30, 32, 20, 41, 15, 30, 10, 50, 5, 5, 5, 5, 20, 8, 100, 3, 60}, 0.5) {
		t.Errorf("median %g", c.Params.MedianS)
	}
	// The fitted parameters name no agent count or mode, and feed a sweep.
	if c.Params.Agents != 0 || c.Params.Mode != "" {
		t.Errorf("calibrated params name agents %d, mode %q", c.Params.Agents, c.Params.Mode)
	}
	doc, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseParams(doc, DefaultSwarmParams())
	if err != nil || back.OverheadS != c.Params.OverheadS {
		t.Fatalf("ParseParams(calibration): %+v %v", back, err)
	}
	back.Tasks = 50
	if rep, err := SweepSwarm(back, []int{2}, []Mode{ModeSelf}); err != nil || rep.Results[0].Completed == 0 {
		t.Errorf("sweep of the calibrated params: %v", err)
	}
	if _, err := Calibrate(nil, base); !errors.Is(err, ErrReport) {
		t.Errorf("no measurements: %v", err)
	}
}

func FuzzParseReport(f *testing.F) {
	f.Add([]byte(runReport))
	f.Add([]byte(`{"report": ` + runReport + `, "max_parallel": 3}`))
	f.Add([]byte(`[{"agents": 16, "mode": "central", "tasks": 40, "drain_s": 12.5}]`))
	f.Add([]byte(`{"results": [{"workers": 2, "mode": "self", "tasks": 3, "time_to_drain": 1e9, "work_median_s": 1}]}`))
	f.Add([]byte(`{"run_id": "x", "status": "succeeded", "tasks": [{"id": "a", "status": "succeeded", "deps": ["b"], "wall_s": 1}, {"id": "b", "status": "skipped"}], "wall_s": 2}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[1, 2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := ParseReport("fuzz", data)
		if err != nil {
			if !errors.Is(err, ErrReport) {
				t.Fatalf("error %v does not match ErrReport", err)
			}
			return
		}
		if len(ms) == 0 {
			t.Fatal("no error and no measurement")
		}
		for _, m := range ms {
			if m.Agents < 1 || m.Tasks < 1 || !(m.MakespanS > 0) || math.IsInf(m.MakespanS, 0) || (m.Mode != ModeCentral && m.Mode != ModeSelf) {
				t.Fatalf("accepted %+v", m)
			}
			if m.Kind == "run" {
				if len(m.Durations) != m.Tasks || len(m.Deps) != m.Tasks {
					t.Fatalf("run with %d tasks, %d durations, %d dep lists", m.Tasks, len(m.Durations), len(m.Deps))
				}
				for i, ds := range m.Deps {
					for _, d := range ds {
						if d < 0 || int(d) >= i {
							t.Fatalf("task %d depends on %d", i, d)
						}
					}
				}
			}
			if m.Tasks <= 50 && m.Agents <= 50 {
				if s := simulateMeasurement(DefaultSwarmParams(), m); !(s >= 0) {
					t.Fatalf("simulating %+v: %g", m, s)
				}
			}
		}
	})
}
