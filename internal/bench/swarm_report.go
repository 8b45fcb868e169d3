package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/apiary-dev/apiary/internal/plot"
)

// ofCapacity formats a row's share of the cluster's capacity.
func ofCapacity(r SwarmRow) string {
	if r.OfCapacity == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*r.OfCapacity)
}

// WriteTable prints the report for people: etcd's capacity, then one row
// per run.
func (r *SwarmReport) WriteTable(w io.Writer) error {
	if len(r.Capacity) > 0 {
		fmt.Fprintf(w, "etcd's own claim-transaction rate: %.0f txn/s at most (", r.CapacityTxnPerS)
		for i, c := range r.Capacity {
			if i > 0 {
				fmt.Fprint(w, ", ")
			}
			fmt.Fprintf(w, "%d in flight %.0f", c.Concurrency, c.PerSecond)
		}
		fmt.Fprintln(w, ")")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "board\tmode\tworkers\thosts\ttasks\tdrain (s)\tclaims/s\tof etcd\tmessages/task\twrites/task\texactly once\t")
	for _, x := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.1f\t%.0f\t%s\t%.1f\t%.2f\t%v\t\n", x.Board, x.Mode, x.Workers, x.Hosts, x.Tasks, x.DrainS,
			x.ClaimsPerS, ofCapacity(x), x.MessagesPerTask, x.WritesPerTask, x.ExactlyOnce)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range r.Failed {
		fmt.Fprintf(w, "did not drain: %s\n", f)
	}
	return nil
}

// WriteFiles writes swarm-scale.json, swarm-scale.md and the plots
// swarm-scale-drain, -messages and -writes (SVG and PNG) into dir.
func (r *SwarmReport) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "swarm-scale.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	if len(r.Capacity) > 0 {
		fmt.Fprintf(&md, "etcd's own claim-transaction rate on the cluster, before and after the etcd runs: %.0f txn/s at most.\n\n", r.CapacityTxnPerS)
		fmt.Fprintf(&md, "| in flight | clients | txn/s | p50 | p99 | failed |\n|---:|---:|---:|---:|---:|---:|\n")
		for _, c := range r.Capacity {
			fmt.Fprintf(&md, "| %d | %d | %.0f | %.1f ms | %.1f ms | %d |\n", c.Concurrency, c.Clients, c.PerSecond,
				float64(c.P50.Microseconds())/1000, float64(c.P99.Microseconds())/1000, c.Errors)
		}
		md.WriteString("\n")
	}
	fmt.Fprintf(&md, "| board | mode | workers | hosts | drain (s) | claims/s | of etcd | messages/task | writes/task | exactly once |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, x := range r.Rows {
		fmt.Fprintf(&md, "| %s | %s | %d | %d | %.1f | %.0f | %s | %.1f | %.2f | %v |\n", x.Board, x.Mode, x.Workers, x.Hosts, x.DrainS,
			x.ClaimsPerS, ofCapacity(x), x.MessagesPerTask, x.WritesPerTask, x.ExactlyOnce)
	}
	if err := os.WriteFile(filepath.Join(dir, "swarm-scale.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	charts := map[string]*plot.Chart{
		"swarm-scale-drain": {Title: fmt.Sprintf("Time to drain %d tasks (%v mean work)", r.Tasks, r.Work),
			X: plot.Axis{Label: "workers", Log: true}, Y: plot.Axis{Label: "drain (s)", Log: true},
			Series: swarmSeries(r.Rows, func(x SwarmRow) float64 { return max(x.DrainS, 0.001) })},
		"swarm-scale-messages": {Title: "Board messages per task", X: plot.Axis{Label: "workers", Log: true},
			Y: plot.Axis{Label: "messages per task", Log: true}, Series: swarmSeries(r.Rows, func(x SwarmRow) float64 { return max(x.MessagesPerTask, 0.001) })},
		"swarm-scale-writes": {Title: "Board writes per task", X: plot.Axis{Label: "workers", Log: true},
			Y: plot.Axis{Label: "writes per task"}, Series: swarmSeries(r.Rows, func(x SwarmRow) float64 { return x.WritesPerTask })},
	}
	for name, c := range charts {
		if len(c.Series) == 0 {
			continue // no run finished: nothing to draw
		}
		svg, err := c.SVG()
		if err != nil {
			return err
		}
		png, err := c.PNG()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".svg"), svg, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// swarmSeries is one series per board and mode, one point per worker
// count. A count measured more than once (--workers 64,64,64) is one point
// at the mean of its runs, with an error bar of their standard deviation;
// without repeats there are no error bars.
func swarmSeries(rows []SwarmRow, val func(SwarmRow) float64) []plot.Series {
	type point struct {
		workers int
		vals    []float64
	}
	var names []string
	points := map[string][]point{}
	for _, x := range rows {
		name := x.Board + " " + x.Mode
		ps, seen := points[name]
		if !seen {
			names = append(names, name)
		}
		i := slices.IndexFunc(ps, func(p point) bool { return p.workers == x.Workers })
		if i < 0 {
			i = len(ps)
			ps = append(ps, point{workers: x.Workers})
		}
		ps[i].vals = append(ps[i].vals, val(x))
		points[name] = ps
	}
	out := make([]plot.Series, 0, len(names))
	for _, name := range names {
		s := plot.Series{Name: name}
		repeated := false
		for _, p := range points[name] {
			mean, sd := meanSD(p.vals)
			s.X, s.Y, s.Err = append(s.X, float64(p.workers)), append(s.Y, mean), append(s.Err, sd)
			repeated = repeated || len(p.vals) > 1
		}
		if !repeated {
			s.Err = nil
		}
		out = append(out, s)
	}
	return out
}

// meanSD is the mean of vs and their sample standard deviation (0 for one
// value).
func meanSD(vs []float64) (mean, sd float64) {
	for _, v := range vs {
		mean += v
	}
	mean /= float64(len(vs))
	if len(vs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, v := range vs {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(vs)-1))
}
