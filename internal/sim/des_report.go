package sim

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/apiary-dev/apiary/internal/plot"
)

// Ideal is the makespan no schedule can beat for r's tasks:
// max(CriticalPathS, WorkS/Agents).
func (r *SwarmResult) Ideal() float64 {
	return max(r.CriticalPathS, r.WorkS/float64(r.Agents))
}

// Efficiency is EffectiveWorkS/BusyWorkS: the share of agent time that
// went into integrated work.
func (r *SwarmResult) Efficiency() float64 {
	if r.BusyWorkS == 0 {
		return 0
	}
	return r.EffectiveWorkS / r.BusyWorkS
}

// WriteText renders the report as a table, one row per agent count and
// mode, followed by notes on saturated or stalled runs.
func (rep *SwarmReport) WriteText(w io.Writer) error {
	var b strings.Builder
	p := rep.Params
	fmt.Fprintf(&b, "%d tasks, durations lognormal median %.4gs p90 %.4gs, seed %d\n", p.Tasks, p.MedianS, p.P90S, p.Seed)
	fmt.Fprintf(&b, "%6s %-7s %10s %6s %9s %10s %5s %9s %6s %6s %10s %8s %6s %6s\n",
		"agents", "mode", "makespan", "/ideal", "completed", "effective", "eff", "conflicts", "dups", "tfail", "messages", "msg/task", "coord", "load")
	var notes []string
	for _, r := range rep.Results {
		ratio := math.NaN()
		if id := r.Ideal(); id > 0 {
			ratio = r.MakespanS / id
		}
		fmt.Fprintf(&b, "%6d %-7s %10s %6.2f %9s %10s %4.0f%% %9d %6d %6d %10d %8.1f %5.1f%% %6.2f\n",
			r.Agents, r.Mode, seconds(r.MakespanS), ratio, fmt.Sprintf("%d/%d", r.Completed, r.Tasks), seconds(r.EffectiveWorkS),
			100*r.Efficiency(), r.Conflicts, r.Duplicates, r.TestFailures, r.Messages, r.MessagesPerTask, 100*r.CoordShare, r.CoordLoad)
		switch {
		case r.Stalled:
			notes = append(notes, fmt.Sprintf("%s with %d agents stalled: gave up at %s with %d of %d tasks done",
				r.Mode, r.Agents, seconds(r.MakespanS), r.Completed+r.Failed+r.Skipped, r.Tasks))
		case r.CoordLoad >= 1:
			notes = append(notes, fmt.Sprintf("%s with %d agents: coordinator saturated (load %.2f >= 1), messages waited up to %s",
				r.Mode, r.Agents, r.CoordLoad, seconds(r.MaxQueueWaitS)))
		}
	}
	b.WriteString("\nmakespan/ideal: over max(critical path, work/agents); completed: integrated with passing tests (the rest failed\n" +
		"or were skipped); eff: effective/busy agent time; dups: duplicate utilities; tfail: failed test runs; coord:\n" +
		"coordination share of tokens; load: the busiest coordinator's offered load (>= 1: saturated)\n")
	for _, n := range notes {
		b.WriteString("note: " + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// seconds renders a duration in seconds compactly: 950s, 12.3ks, 1.2Ms.
func seconds(s float64) string {
	switch a := math.Abs(s); {
	case a >= 1e6:
		return fmt.Sprintf("%.2fMs", s/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.1fks", s/1e3)
	case a >= 100:
		return fmt.Sprintf("%.0fs", s)
	default:
		return fmt.Sprintf("%.2fs", s)
	}
}

// NamedChart is a chart and the base name of its files.
type NamedChart struct {
	Name  string
	Chart plot.Chart
}

// Charts returns the report's charts, each with one series per mode (and
// per measure, for conflicts and duplicates) against the agent count on a
// log axis: makespan, messages, coordination share of tokens, conflicts
// and duplicates, and efficiency.
func (rep *SwarmReport) Charts() []NamedChart {
	var modes []Mode
	for _, r := range rep.Results {
		if !slices.Contains(modes, r.Mode) {
			modes = append(modes, r.Mode)
		}
	}
	series := func(name string, m Mode, f func(*SwarmResult) float64) plot.Series {
		s := plot.Series{Name: name}
		for i := range rep.Results {
			if r := &rep.Results[i]; r.Mode == m {
				s.X = append(s.X, float64(r.Agents))
				s.Y = append(s.Y, f(r))
			}
		}
		return s
	}
	perMode := func(f func(*SwarmResult) float64) []plot.Series {
		var out []plot.Series
		for i, m := range modes {
			s := series(modeName(m), m, f)
			s.Color = plot.SeriesColor(i)
			out = append(out, s)
		}
		return out
	}
	agents := plot.Axis{Label: "agents", Log: true}
	title := func(what string) string {
		return fmt.Sprintf("%s, %d tasks (seed %d)", what, rep.Params.Tasks, rep.Params.Seed)
	}
	var waste []plot.Series
	for i, m := range modes {
		c := series("conflicts, "+modeName(m), m, func(r *SwarmResult) float64 { return float64(r.Conflicts) })
		d := series("duplicates, "+modeName(m), m, func(r *SwarmResult) float64 { return float64(r.Duplicates) })
		c.Color, d.Color = plot.SeriesColor(i), plot.SeriesColor(i+2)
		waste = append(waste, c, d)
	}
	return []NamedChart{
		{"makespan", plot.Chart{Title: title("Makespan"), X: agents, Y: plot.Axis{Label: "makespan (s)", Log: true},
			Series: perMode(func(r *SwarmResult) float64 { return max(r.MakespanS, 1e-9) })}},
		{"messages", plot.Chart{Title: title("Coordination messages"), X: agents, Y: plot.Axis{Label: "messages (heartbeats included)", Log: true},
			Series: perMode(func(r *SwarmResult) float64 { return max(float64(r.Messages), 1) })}},
		{"coordination", plot.Chart{Title: title("Coordination share of tokens"), X: agents, Y: plot.Axis{Label: "coordination tokens (%)"},
			Series: perMode(func(r *SwarmResult) float64 { return 100 * r.CoordShare })}},
		{"waste", plot.Chart{Title: title("Merge conflicts and duplicate work"), X: agents, Y: plot.Axis{Label: "count"}, Series: waste}},
		{"efficiency", plot.Chart{Title: title("Effective share of agent time"), X: agents, Y: plot.Axis{Label: "effective / busy work (%)", Min: 0, Max: 100},
			Series: perMode(func(r *SwarmResult) float64 { return 100 * r.Efficiency() })}},
	}
}

// modeName is a mode's name in legends.
func modeName(m Mode) string {
	if m == ModeSelf {
		return "self-organizing"
	}
	return string(m)
}
