package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ErrReport is matched by every error of ParseReport.
var ErrReport = errors.New("sim: bad report")

// Measurement is one measured run the simulator can be held against: a
// run of the runtime (`apiary run --json`, a run directory) or one row of
// a swarm benchmark.
type Measurement struct {
	Source string `json:"source"`
	Kind   string `json:"kind"` // "run" or "bench"
	Mode   Mode   `json:"mode"` // a run's scheduler is central
	Agents int    `json:"agents"`
	// AgentsInferred: the report did not say how many agents ran at once;
	// Agents is the run's average parallelism.
	AgentsInferred bool    `json:"agents_inferred,omitempty"`
	Tasks          int     `json:"tasks"`
	MakespanS      float64 `json:"makespan_s"`

	// Runs: each task's wall time (dispatch to receipt) and dependencies,
	// in an order where dependencies come first; attempts, gate
	// rejections and reconciliations.
	Durations       []float64 `json:"-"`
	Deps            [][]int32 `json:"-"`
	Attempts        int       `json:"attempts,omitempty"`
	Rejections      int       `json:"gate_rejections,omitempty"`
	Reconciliations int       `json:"reconciliations,omitempty"`

	// Benchmarks: what the row reports besides the time to drain.
	MessagesPerTask float64 `json:"messages_per_task,omitempty"`
	MedianS         float64 `json:"work_median_s,omitempty"`
	P90S            float64 `json:"work_p90_s,omitempty"`
}

// Limits of ParseReport.
const (
	maxReportBytes = 64 << 20
	maxReportTasks = 100_000
	maxBenchRows   = 10_000
)

func reportErr(source, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrReport, source, fmt.Sprintf(format, args...))
}

// ParseReport reads one report, named source in errors and results. It
// accepts:
//
//   - a run report, as printed by `apiary run --json` and `apiary status
//     --json` (an object with run_id, tasks and wall_s), optionally with
//     max_parallel and per-task deps (task ids) added — the CLI adds both
//     when it reads a run directory — or wrapped as {"report": ...} (as
//     `apiary demo --json` prints it); the run must have finished;
//   - a swarm benchmark report: an array of rows, or an object holding
//     them under "results" or "rows" (`apiary sim swarm --json` output is
//     one). A row has agents (or workers), mode (central, or self /
//     self-organizing / claims), tasks, and the time to drain as
//     makespan_s, drain_s, time_to_drain_s, wall_s or seconds (or _ms,
//     or _ns, or time_to_drain as Go duration nanoseconds); optionally
//     messages_per_task and work_median_s / work_p90_s, the distribution of
//     the simulated work.
func ParseReport(source string, data []byte) ([]Measurement, error) {
	if len(data) > maxReportBytes {
		return nil, reportErr(source, "larger than %d bytes", maxReportBytes)
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		return parseBenchRows(source, data)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, reportErr(source, "not a JSON object or array: %v", err)
	}
	switch {
	case top["report"] != nil:
		var mp int
		if raw := top["max_parallel"]; raw != nil {
			if err := json.Unmarshal(raw, &mp); err != nil {
				return nil, reportErr(source, "max_parallel: %v", err)
			}
		}
		m, err := parseRunReport(source, top["report"], mp)
		if err != nil {
			return nil, err
		}
		return []Measurement{m}, nil
	case top["run_id"] != nil:
		m, err := parseRunReport(source, data, 0)
		if err != nil {
			return nil, err
		}
		return []Measurement{m}, nil
	case top["results"] != nil:
		return parseBenchRows(source, top["results"])
	case top["rows"] != nil:
		return parseBenchRows(source, top["rows"])
	}
	return nil, reportErr(source, "neither a run report (run_id, tasks) nor a benchmark report (results or rows)")
}

type runReportJSON struct {
	RunID       string  `json:"run_id"`
	Status      string  `json:"status"`
	WallS       float64 `json:"wall_s"`
	MaxParallel int     `json:"max_parallel"`
	Tasks       []struct {
		ID              string          `json:"id"`
		Status          string          `json:"status"`
		Attempts        int             `json:"attempts"`
		WallS           float64         `json:"wall_s"`
		Gate            json.RawMessage `json:"gate"`
		Reconciliations int             `json:"reconciliations"`
		Deps            []string        `json:"deps"`
	} `json:"tasks"`
	Predicted struct {
		Tasks []string `json:"tasks"`
	} `json:"predicted_critical_path"`
}

func parseRunReport(source string, data []byte, maxParallel int) (Measurement, error) {
	var r runReportJSON
	if err := json.Unmarshal(data, &r); err != nil {
		return Measurement{}, reportErr(source, "run report: %v", err)
	}
	if r.Status != "succeeded" && r.Status != "failed" {
		return Measurement{}, reportErr(source, "run %q has status %q; only a finished run (succeeded or failed) has a makespan", r.RunID, r.Status)
	}
	if !(r.WallS > 0 && r.WallS <= 1e9) {
		return Measurement{}, reportErr(source, "wall_s must be in (0, 1e9], got %g", r.WallS)
	}
	if len(r.Tasks) == 0 || len(r.Tasks) > maxReportTasks {
		return Measurement{}, reportErr(source, "want 1 to %d tasks, got %d", maxReportTasks, len(r.Tasks))
	}
	if maxParallel == 0 {
		maxParallel = r.MaxParallel
	}
	if maxParallel < 0 || maxParallel > maxSimAgents {
		return Measurement{}, reportErr(source, "max_parallel must be in [1, %d], got %d", maxSimAgents, maxParallel)
	}
	// The tasks that ran, by id, with their dependencies among them.
	index, seen := map[string]int{}, map[string]bool{}
	var ids []string
	var walls []float64
	var deps [][]string
	m := Measurement{Source: source, Kind: "run", Mode: ModeCentral, MakespanS: r.WallS}
	for i, t := range r.Tasks {
		if t.ID == "" {
			return Measurement{}, reportErr(source, "tasks[%d]: empty id", i)
		}
		if seen[t.ID] {
			return Measurement{}, reportErr(source, "tasks[%d]: duplicate id %q", i, t.ID)
		}
		seen[t.ID] = true
		if len(t.Deps) > maxReportTasks {
			return Measurement{}, reportErr(source, "task %q: too many deps", t.ID)
		}
		if !(t.WallS >= 0 && t.WallS <= 1e9) || t.Attempts < 0 || t.Attempts > 1000 || t.Reconciliations < 0 || t.Reconciliations > 1000 {
			return Measurement{}, reportErr(source, "task %q: wall_s, attempts or reconciliations out of range", t.ID)
		}
		m.Attempts += t.Attempts
		m.Reconciliations += t.Reconciliations
		if len(t.Gate) > 0 && string(t.Gate) != "null" {
			m.Rejections++
		}
		if t.Status != "succeeded" && t.Status != "failed" {
			ids = append(ids, t.ID) // listed, so deps on it are known, but it did not run
			walls = append(walls, -1)
			deps = append(deps, nil)
			continue
		}
		index[t.ID] = len(ids)
		ids = append(ids, t.ID)
		walls = append(walls, t.WallS)
		deps = append(deps, t.Deps)
	}
	if len(index) == 0 {
		return Measurement{}, reportErr(source, "no task ran")
	}
	hasDeps := false
	for i, ds := range deps {
		for _, d := range ds {
			if !seen[d] {
				return Measurement{}, reportErr(source, "task %q depends on unknown task %q", ids[i], d)
			}
			hasDeps = true
		}
	}
	if !hasDeps {
		// Without dependencies, the predicted critical path still orders
		// the tasks along it.
		p := r.Predicted.Tasks
		for k := 1; k < len(p); k++ {
			i, ok1 := index[p[k]]
			_, ok2 := index[p[k-1]]
			if ok1 && ok2 && !slices.Contains(deps[i], p[k-1]) {
				deps[i] = append(deps[i], p[k-1])
			}
		}
	}
	order, err := topoOrder(ids, deps)
	if err != nil {
		return Measurement{}, reportErr(source, "%v", err)
	}
	pos := map[string]int32{}
	sum := 0.0
	for _, i := range order {
		if walls[i] < 0 {
			continue
		}
		pos[ids[i]] = int32(len(m.Durations))
		m.Durations = append(m.Durations, walls[i])
		var ds []int32
		for _, d := range deps[i] {
			if p, ok := pos[d]; ok {
				ds = append(ds, p)
			}
		}
		m.Deps = append(m.Deps, ds)
		sum += walls[i]
	}
	m.Tasks = len(m.Durations)
	m.Agents = maxParallel
	if m.Agents == 0 {
		m.Agents = int(min(float64(m.Tasks), max(1, math.Round(sum/r.WallS))))
		m.AgentsInferred = true
	}
	return m, nil
}

// topoOrder orders tasks so that dependencies come first, keeping the
// given order among tasks that are free to go (Kahn's algorithm).
func topoOrder(ids []string, deps [][]string) ([]int, error) {
	idx := make(map[string]int, len(ids))
	for i, id := range ids {
		idx[id] = i
	}
	indeg := make([]int, len(ids))
	children := make([][]int, len(ids))
	for i, ds := range deps {
		for _, d := range ds {
			j := idx[d]
			if j == i {
				return nil, fmt.Errorf("task %q depends on itself", ids[i])
			}
			indeg[i]++
			children[j] = append(children[j], i)
		}
	}
	var order, ready []int
	for i := range ids {
		if indeg[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		slices.Sort(ready)
		i := ready[0]
		ready = ready[1:]
		order = append(order, i)
		for _, c := range children[i] {
			if indeg[c]--; indeg[c] == 0 {
				ready = append(ready, c)
			}
		}
	}
	if len(order) != len(ids) {
		return nil, errors.New("the task dependencies have a cycle")
	}
	return order, nil
}

// parseBenchRows reads benchmark rows (see ParseReport).
func parseBenchRows(source string, data []byte) ([]Measurement, error) {
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, reportErr(source, "benchmark rows: %v", err)
	}
	if len(rows) == 0 || len(rows) > maxBenchRows {
		return nil, reportErr(source, "want 1 to %d benchmark rows, got %d", maxBenchRows, len(rows))
	}
	out := make([]Measurement, 0, len(rows))
	for i, row := range rows {
		m, err := parseBenchRow(fmt.Sprintf("%s#%d", source, i+1), row)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func parseBenchRow(source string, row map[string]json.RawMessage) (Measurement, error) {
	num := func(keys ...string) (float64, string, error) {
		for _, k := range keys {
			raw, ok := row[k]
			if !ok || string(raw) == "null" {
				continue
			}
			var v float64
			if err := json.Unmarshal(raw, &v); err != nil {
				return 0, k, reportErr(source, "%s: not a number", k)
			}
			return v, k, nil
		}
		return 0, "", nil
	}
	m := Measurement{Source: source, Kind: "bench"}
	agents, key, err := num("agents", "workers")
	if err != nil {
		return m, err
	}
	if key == "" || agents != math.Trunc(agents) || agents < 1 || agents > maxSimAgents {
		return m, reportErr(source, "agents (or workers) must be a whole number in [1, %d]", maxSimAgents)
	}
	tasks, key, err := num("tasks")
	if err != nil {
		return m, err
	}
	if key == "" || tasks != math.Trunc(tasks) || tasks < 1 || tasks > maxSimTasks {
		return m, reportErr(source, "tasks must be a whole number in [1, %d]", maxSimTasks)
	}
	m.Agents, m.Tasks = int(agents), int(tasks)
	var mode string
	if raw, ok := row["mode"]; ok {
		if err := json.Unmarshal(raw, &mode); err != nil {
			return m, reportErr(source, "mode: not a string")
		}
	}
	switch mode = strings.ToLower(mode); {
	case strings.Contains(mode, "central"):
		m.Mode = ModeCentral
	case strings.Contains(mode, "self"), strings.Contains(mode, "claim"):
		m.Mode = ModeSelf
	default:
		return m, reportErr(source, "mode %q is neither central nor self-organizing", mode)
	}
	for _, unit := range []struct {
		keys  []string
		scale float64
	}{
		{[]string{"makespan_s", "drain_s", "time_to_drain_s", "wall_s", "seconds"}, 1},
		{[]string{"makespan_ms", "drain_ms", "time_to_drain_ms"}, 1e-3},
		{[]string{"drain_ns", "time_to_drain_ns", "time_to_drain"}, 1e-9},
	} {
		v, key, err := num(unit.keys...)
		if err != nil {
			return m, err
		}
		if key != "" {
			m.MakespanS = v * unit.scale
			break
		}
	}
	if !(m.MakespanS > 0 && m.MakespanS <= 1e9) {
		return m, reportErr(source, "the time to drain (makespan_s, drain_s, ...) must be in (0, 1e9] seconds, got %g", m.MakespanS)
	}
	if m.MessagesPerTask, _, err = num("messages_per_task"); err != nil {
		return m, err
	}
	if m.MedianS, _, err = num("work_median_s", "median_s"); err != nil {
		return m, err
	}
	if m.P90S, _, err = num("work_p90_s", "p90_s"); err != nil {
		return m, err
	}
	if !(m.MessagesPerTask >= 0 && m.MessagesPerTask <= 1e9) || !(m.MedianS >= 0 && m.MedianS <= 1e9) || !(m.P90S >= 0 && m.P90S <= 1e12) {
		return m, reportErr(source, "messages_per_task, work_median_s and work_p90_s must be finite and >= 0")
	}
	if m.MedianS > 0 && m.P90S < m.MedianS {
		m.P90S = m.MedianS
	}
	if m.P90S > 1e3*m.MedianS {
		return m, reportErr(source, "work_p90_s must be at most 1000 × work_median_s")
	}
	return m, nil
}
