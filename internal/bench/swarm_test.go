package bench

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSwarmLocal runs the swarm benchmark at a tiny size on the local
// board, both modes: each row drains exactly once and counts its traffic,
// and the table, the JSON and the plots are written.
func TestSwarmLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var progress bytes.Buffer
	rep, err := Swarm(t.Context(), SwarmConfig{Workers: []int{3}, Tasks: 20, Work: 2 * time.Millisecond, Boards: []string{BoardLocal},
		Modes: []string{SwarmCentral, SwarmSelf}, Shards: 2, Timeout: time.Minute, Dir: filepath.Join(dir, "boards"), Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(rep.Rows) != 2 {
		t.Fatalf("rows %+v; want one per mode", rep.Rows)
	}
	for _, r := range rep.Rows {
		if !r.ExactlyOnce || r.Tasks != 20 || r.WritesPerTask <= 0 || r.MessagesPerTask <= 0 || r.ClaimsPerS <= 0 {
			t.Errorf("row %+v", r)
		}
	}
	out := filepath.Join(dir, "out")
	if err := rep.WriteFiles(out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"swarm-scale.md", "swarm-scale.json", "swarm-scale-drain.svg", "swarm-scale-messages.png", "swarm-scale-writes.svg"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "swarm-scale.md"))
	if err != nil || !strings.Contains(string(md), "central") || !strings.Contains(string(md), "self") {
		t.Errorf("swarm-scale.md: %q %v", md, err)
	}
}

// TestSwarmSeriesRepeats: a worker count measured more than once is one
// point at the mean with its runs' standard deviation as the error bar;
// a series without repeats has no error bars.
func TestSwarmSeriesRepeats(t *testing.T) {
	t.Parallel()
	row := func(mode string, workers int, drain float64) SwarmRow {
		return SwarmRow{Board: BoardLocal, SwarmResult: SwarmResult{Mode: mode, Workers: workers, DrainS: drain}}
	}
	rows := []SwarmRow{row(SwarmSelf, 4, 1), row(SwarmSelf, 16, 2), row(SwarmSelf, 4, 3), row(SwarmCentral, 4, 5), row(SwarmCentral, 16, 6)}
	ss := swarmSeries(rows, func(x SwarmRow) float64 { return x.DrainS })
	if len(ss) != 2 {
		t.Fatalf("series %+v", ss)
	}
	self, central := ss[0], ss[1]
	if self.Name != "local self" || !slices.Equal(self.X, []float64{4, 16}) || !slices.Equal(self.Y, []float64{2, 2}) ||
		len(self.Err) != 2 || math.Abs(self.Err[0]-math.Sqrt2) > 1e-12 || self.Err[1] != 0 {
		t.Errorf("repeated series %+v", self)
	}
	if central.Name != "local central" || !slices.Equal(central.Y, []float64{5, 6}) || central.Err != nil {
		t.Errorf("series without repeats %+v", central)
	}
}
