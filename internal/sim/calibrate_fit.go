package sim

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Calibration is the answer of `apiary sim calibrate`: the simulator's
// parameters fitted to measured runs, and how well the simulator then
// reproduces each measured makespan.
type Calibration struct {
	// Params are the base parameters with the fitted ones replaced, and
	// Agents and Mode left empty; feed them back with `apiary sim swarm
	// --params FILE`.
	Params SwarmParams   `json:"params"`
	Fitted []FittedParam `json:"fitted"`
	// Conditions are the settings under which the fitted parameters were
	// simulated; `apiary sim swarm --params` warns when it departs from
	// them.
	Conditions      []FitCondition   `json:"conditions"`
	Rows            []CalibrationRow `json:"rows"`
	MeanAbsErrorPct float64          `json:"mean_abs_error_pct"`
}

// FittedParam is one parameter set from the measurements, and from what.
type FittedParam struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	From  string  `json:"from"`
}

// CalibrationRow compares one measurement with its simulation.
type CalibrationRow struct {
	Source         string  `json:"source"`
	Kind           string  `json:"kind"`
	Mode           Mode    `json:"mode"`
	Agents         int     `json:"agents"`
	AgentsInferred bool    `json:"agents_inferred,omitempty"`
	Tasks          int     `json:"tasks"`
	MeasuredS      float64 `json:"measured_s"`
	SimulatedS     float64 `json:"simulated_s"`
	ErrorPct       float64 `json:"error_pct"` // (simulated − measured) / measured × 100
}

// Calibrate fits the simulator to measurements, starting from base:
//
//   - task durations (median_s, p90_s) from the tasks of run reports, or
//     from benchmark rows that state their work distribution;
//   - pass_rate from run reports' gate rejections per attempt;
//   - overhead_s, the time each attempt adds beyond its task's work, by
//     replaying each run's own task times and dependencies on its number
//     of agents (trace-driven) and matching the measured makespans;
//   - central_msg_s and gate_msg_s (and median_s when benchmark rows do
//     not state it) by matching the benchmark rows' times to drain.
//
// A fit minimizes the squared log error of the makespans: a coarse scan,
// then golden-section search, one parameter at a time. Every simulation
// uses base.Seed, so the result is deterministic.
func Calibrate(ms []Measurement, base SwarmParams) (*Calibration, error) {
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w: no measurements", ErrReport)
	}
	if err := base.Validate(); err != nil {
		return nil, err
	}
	c := &Calibration{Params: base}
	p := &c.Params
	var runs, bench []Measurement
	var samples []float64
	attempts, rejections := 0, 0
	for _, m := range ms {
		if m.Kind == "run" {
			runs = append(runs, m)
			samples = append(samples, m.Durations...)
			attempts += m.Attempts
			rejections += m.Rejections
		} else {
			bench = append(bench, m)
		}
	}
	fitMedian := false
	switch {
	case len(samples) > 0 && quantile(samples, 0.5) > 0:
		p.MedianS, p.P90S = quantile(samples, 0.5), max(quantile(samples, 0.9), quantile(samples, 0.5))
		from := fmt.Sprintf("%d task durations", len(samples))
		c.Fitted = append(c.Fitted, FittedParam{"median_s", p.MedianS, from}, FittedParam{"p90_s", p.P90S, from})
	case len(bench) > 0 && bench[0].MedianS > 0:
		med, p90, n := 0.0, 0.0, 0
		for _, m := range bench {
			if m.MedianS > 0 {
				med, p90, n = med+m.MedianS, p90+m.P90S, n+1
			}
		}
		p.MedianS, p.P90S = med/float64(n), max(p90/float64(n), med/float64(n))
		from := fmt.Sprintf("%d benchmark rows", n)
		c.Fitted = append(c.Fitted, FittedParam{"median_s", p.MedianS, from}, FittedParam{"p90_s", p.P90S, from})
	case len(bench) > 0:
		fitMedian = true
	}
	if attempts > 0 {
		p.PassRate = clampF(1-float64(rejections)/float64(attempts), 0.05, 1)
		c.Fitted = append(c.Fitted, FittedParam{"pass_rate", p.PassRate, fmt.Sprintf("%d gate rejections in %d attempts", rejections, attempts)})
	}
	if len(runs) > 0 {
		hi := 0.0
		for _, m := range runs {
			hi = max(hi, m.MakespanS)
		}
		p.OverheadS = fitScalar(func(o float64) float64 {
			q := *p
			q.OverheadS = o
			return logError(runs, func(m Measurement) float64 { return simulateRun(q, m) })
		}, 0, hi, false)
		c.Fitted = append(c.Fitted, FittedParam{"overhead_s", p.OverheadS, fmt.Sprintf("makespans of %d runs", len(runs))})
	}
	if len(bench) > 0 {
		if err := fitBench(c, bench, fitMedian); err != nil {
			return nil, err
		}
	}
	// How well the fitted simulator reproduces every measurement.
	sims := parallelMap(ms, func(m Measurement) float64 { return simulateMeasurement(*p, m) })
	sumAbs := 0.0
	for i, m := range ms {
		row := CalibrationRow{Source: m.Source, Kind: m.Kind, Mode: m.Mode, Agents: m.Agents, AgentsInferred: m.AgentsInferred,
			Tasks: m.Tasks, MeasuredS: m.MakespanS, SimulatedS: sims[i]}
		row.ErrorPct = (row.SimulatedS - row.MeasuredS) / row.MeasuredS * 100
		sumAbs += math.Abs(row.ErrorPct)
		c.Rows = append(c.Rows, row)
	}
	c.MeanAbsErrorPct = sumAbs / float64(len(ms))
	if err := p.Validate(); err != nil {
		return nil, err
	}
	// Each measurement had its own agents and mode; the fitted parameters
	// name neither, so a sweep fed with them sets its own.
	p.Agents, p.Mode = 0, ""
	c.Conditions = conditions(c.Fitted)
	return c, nil
}

// fitBench fits the coordination costs — the central scheduler's and the
// gatekeepers' time per message, the message latency — and the work's
// median (when fitMedian) to the benchmark rows, by coordinate descent.
func fitBench(c *Calibration, bench []Measurement, fitMedian bool) error {
	p := &c.Params
	type knob struct {
		name   string
		v      *float64
		lo, hi float64
		rows   []Measurement
	}
	var knobs []knob
	var central, self []Measurement
	for _, m := range bench {
		if m.Mode == ModeCentral {
			central = append(central, m)
		} else {
			self = append(self, m)
		}
	}
	ratio := p.P90S / p.MedianS
	if fitMedian {
		// Start from the work the fastest-draining row implies.
		m := bench[0]
		for _, x := range bench {
			if x.MakespanS*float64(x.Agents)/float64(x.Tasks) < m.MakespanS*float64(m.Agents)/float64(m.Tasks) {
				m = x
			}
		}
		sigma := lognormalSigma(p.MedianS, p.P90S)
		p.MedianS = m.MakespanS * float64(m.Agents) / float64(m.Tasks) / math.Exp(sigma*sigma/2)
		p.P90S = p.MedianS * ratio
		knobs = append(knobs, knob{"median_s", &p.MedianS, p.MedianS / 100, p.MedianS * 100, bench})
	}
	if len(central) > 0 {
		knobs = append(knobs, knob{"central_msg_s", &p.CentralMsgS, 1e-7, 10, central})
	}
	if len(self) > 0 {
		knobs = append(knobs, knob{"gate_msg_s", &p.GateMsgS, 1e-7, 10, self})
	}
	// The message latency: it and the work's median both lengthen every
	// task, so drain times alone do not tell them apart well; fitted last,
	// it takes up what the per-message costs do not explain.
	knobs = append(knobs, knob{"latency_s", &p.LatencyS, 1e-6, 10, bench})
	for range 3 {
		for _, k := range knobs {
			*k.v = fitScalar(func(v float64) float64 {
				q := *p
				switch k.name {
				case "median_s":
					q.MedianS, q.P90S = v, v*ratio
				case "central_msg_s":
					q.CentralMsgS = v
				case "gate_msg_s":
					q.GateMsgS = v
				case "latency_s":
					q.LatencyS = v
				}
				return logError(k.rows, func(m Measurement) float64 { return simulateMeasurement(q, m) })
			}, k.lo, k.hi, true)
			if k.name == "median_s" {
				p.P90S = p.MedianS * ratio
			}
		}
	}
	for _, k := range knobs {
		c.Fitted = append(c.Fitted, FittedParam{k.name, *k.v, fmt.Sprintf("times to drain of %d benchmark rows", len(k.rows))})
		if k.name == "median_s" {
			c.Fitted = append(c.Fitted, FittedParam{"p90_s", p.P90S, fmt.Sprintf("median_s × %.3g (p90/median of the defaults)", ratio)})
		}
	}
	return p.Validate()
}

// simulateMeasurement simulates m with p: a run by replaying its tasks, a
// benchmark row with a drawn workload of its size.
func simulateMeasurement(p SwarmParams, m Measurement) float64 {
	if m.Kind == "run" {
		return simulateRun(p, m)
	}
	r, err := SimulateSwarm(benchParams(p, m))
	if err != nil {
		return math.Inf(1)
	}
	return r.MakespanS
}

// benchParams are p as a swarm benchmark row m runs them: its agents, mode
// and tasks, and only coordination — a benchmark's simulated tasks always
// pass and are never merged, so there is no merge role, no write sets, no
// utilities and no interface changes.
func benchParams(p SwarmParams, m Measurement) SwarmParams {
	p.Agents, p.Mode, p.Tasks = m.Agents, m.Mode, m.Tasks
	p.apply(benchSettings)
	return p
}

// runParams are p as simulateRun replays run m: its agents on apiary's
// in-process central scheduler (no message costs), with no merges and no
// tests (the measured task times hold them).
func runParams(p SwarmParams, m Measurement) SwarmParams {
	p.Agents, p.Mode = m.Agents, ModeCentral
	p.apply(runSettings)
	return p
}

// simulateRun replays a run: its own task times (which already hold the
// run's retries, gates and integration waits) and dependencies on its
// number of agents, by apiary's in-process central scheduler (no message
// costs), with overhead_s added per task.
func simulateRun(p SwarmParams, m Measurement) float64 {
	r, err := SimulateWorkload(runParams(p, m), Workload{Durations: m.Durations, Deps: m.Deps})
	if err != nil {
		return math.Inf(1)
	}
	return r.MakespanS
}

// logError is Σ (ln simulated − ln measured)² over ms.
func logError(ms []Measurement, sim func(Measurement) float64) float64 {
	vals := parallelMap(ms, sim)
	e := 0.0
	for i, m := range ms {
		s := vals[i]
		if !(s > 0) || math.IsInf(s, 0) {
			return math.Inf(1)
		}
		d := math.Log(s) - math.Log(m.MakespanS)
		e += d * d
	}
	return e
}

// fitScalar minimizes f on [lo, hi] (on a log scale when logScale): a scan
// of 16 points, then golden-section search between the best one's
// neighbours.
func fitScalar(f func(float64) float64, lo, hi float64, logScale bool) float64 {
	to, from := func(v float64) float64 { return v }, func(u float64) float64 { return u }
	if logScale {
		to, from = math.Log, math.Exp
	}
	a, b := to(lo), to(hi)
	const n = 16
	best, bestF := 0, math.Inf(1)
	for i := range n {
		if v := f(from(a + (b-a)*float64(i)/(n-1))); v < bestF {
			best, bestF = i, v
		}
	}
	u0, u1 := a+(b-a)*float64(max(best-1, 0))/(n-1), a+(b-a)*float64(min(best+1, n-1))/(n-1)
	const g = 0.6180339887498949
	c, d := u1-g*(u1-u0), u0+g*(u1-u0)
	fc, fd := f(from(c)), f(from(d))
	for range 20 {
		if fc <= fd {
			u1, d, fd = d, c, fc
			c = u1 - g*(u1-u0)
			fc = f(from(c))
		} else {
			u0, c, fc = c, d, fd
			d = u0 + g*(u1-u0)
			fd = f(from(d))
		}
	}
	u := (u0 + u1) / 2
	if f(from(u)) > bestF { // the scan point beats the refinement
		u = a + (b-a)*float64(best)/(n-1)
	}
	return from(u)
}

// parallelMap applies fn to every element on up to GOMAXPROCS goroutines,
// which all end before it returns.
func parallelMap(ms []Measurement, fn func(Measurement) float64) []float64 {
	out := make([]float64, len(ms))
	workers := min(runtime.GOMAXPROCS(0), len(ms))
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				out[i] = fn(ms[i])
			}
		})
	}
	for i := range ms {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// quantile is the q-quantile of vs by linear interpolation.
func quantile(vs []float64, q float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

func clampF(v, lo, hi float64) float64 { return max(lo, min(hi, v)) }

// WriteText renders the calibration for people.
func (c *Calibration) WriteText(w io.Writer) error {
	var b strings.Builder
	kinds := map[string]int{}
	for _, r := range c.Rows {
		kinds[r.Kind]++
	}
	fmt.Fprintf(&b, "calibrated on %d measurements (%d runs, %d benchmark rows)\n", len(c.Rows), kinds["run"], kinds["bench"])
	b.WriteString("fitted parameters (--json gives all of them for 'apiary sim swarm --params FILE'):\n")
	for _, f := range c.Fitted {
		fmt.Fprintf(&b, "  %-14s %10.4g   from %s\n", f.Name, f.Value, f.From)
	}
	fmt.Fprintf(&b, "\n%-40s %-5s %-7s %6s %6s %11s %11s %8s\n", "source", "kind", "mode", "agents", "tasks", "measured", "simulated", "error")
	for _, r := range c.Rows {
		agents := fmt.Sprint(r.Agents)
		if r.AgentsInferred {
			agents += "~"
		}
		src := r.Source
		if len(src) > 40 {
			src = "..." + src[len(src)-37:]
		}
		fmt.Fprintf(&b, "%-40s %-5s %-7s %6s %6d %11s %11s %+7.1f%%\n", src, r.Kind, r.Mode, agents, r.Tasks, seconds(r.MeasuredS), seconds(r.SimulatedS), r.ErrorPct)
	}
	fmt.Fprintf(&b, "mean absolute error: %.1f%%\n", c.MeanAbsErrorPct)
	for _, fc := range c.Conditions {
		var set []string
		for _, s := range fc.Settings {
			set = append(set, fmt.Sprintf("%s %g", s.Name, s.Value))
		}
		fmt.Fprintf(&b, "note: %s fitted on %s (%s); 'apiary sim swarm --params' warns when it simulates otherwise\n",
			strings.Join(fc.Fitted, ", "), fc.Under, strings.Join(set, ", "))
	}
	if slices.ContainsFunc(c.Rows, func(r CalibrationRow) bool { return r.AgentsInferred }) {
		b.WriteString("~: the report does not say how many agents ran at once; its average parallelism is used\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
