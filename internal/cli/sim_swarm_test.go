package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"image"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/plot"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
	"github.com/apiary-dev/apiary/internal/sim"
)

// mustApiary runs the command line in-process and returns stdout, failing the
// test on a non-zero exit.
func mustApiary(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := Main(t.Context(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("apiary %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestSimSwarmGolden pins `apiary sim swarm` for a fixed seed.
func TestSimSwarmGolden(t *testing.T) {
	t.Parallel()
	got := mustApiary(t, "sim", "swarm", "--agents", "4,16,...,256", "--tasks", "600", "--mode", "both", "--seed", "7")
	golden := filepath.Join("testdata", "sim_swarm.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli -run TestSimSwarmGolden -update)", err)
	}
	if got != string(want) {
		t.Errorf("sim swarm output changed; got:\n%s\nwant:\n%s\n(rerun with -update if intended)", got, want)
	}
	// Same seed, same JSON; another seed, another run.
	a := mustApiary(t, "sim", "swarm", "--agents", "64", "--tasks", "300", "--seed", "3", "--json")
	b := mustApiary(t, "sim", "swarm", "--agents", "64", "--tasks", "300", "--seed", "3", "--json")
	c := mustApiary(t, "sim", "swarm", "--agents", "64", "--tasks", "300", "--seed", "4", "--json")
	if a != b || a == c {
		t.Errorf("seeded runs: same seed equal %v, other seed different %v", a == b, a != c)
	}
	var rep sim.SwarmReport
	if err := json.Unmarshal([]byte(a), &rep); err != nil || len(rep.Results) != 2 || rep.Results[0].Mode != sim.ModeCentral ||
		rep.Results[1].Mode != sim.ModeSelf || rep.Params.Tasks != 300 || rep.Results[1].Completed == 0 {
		t.Fatalf("JSON report: %v %+v", err, rep)
	}
}

// svgNode is a generic XML element.
type svgNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []svgNode  `xml:",any"`
}

func (n *svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n *svgNode) find(keep func(*svgNode) bool) []*svgNode {
	var out []*svgNode
	if keep(n) {
		out = append(out, n)
	}
	for i := range n.Nodes {
		out = append(out, n.Nodes[i].find(keep)...)
	}
	return out
}

// TestSimSwarmCharts checks the charts --out writes: every SVG parses, has
// its axis titles, a legend entry per series naming both modes, and one
// path per series; every PNG decodes at its size with ink in each series'
// color.
func TestSimSwarmCharts(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	stdout := mustApiary(t, "sim", "swarm", "--agents", "8,32,128", "--tasks", "400", "--out", out)
	if !strings.Contains(stdout, "charts: "+out) {
		t.Errorf("no mention of the charts:\n%s", stdout)
	}
	wantY := map[string]string{
		"makespan": "makespan (s)", "messages": "messages (heartbeats included)", "coordination": "coordination tokens (%)",
		"waste": "count", "efficiency": "effective / busy work (%)",
	}
	for name, ylabel := range wantY {
		data, err := os.ReadFile(filepath.Join(out, "swarm-"+name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		var root svgNode
		if err := xml.Unmarshal(data, &root); err != nil {
			t.Fatalf("%s.svg: %v", name, err)
		}
		text := func(class string) []string {
			var s []string
			for _, n := range root.find(func(n *svgNode) bool { return n.attr("class") == class }) {
				s = append(s, n.Text)
			}
			return s
		}
		if x, y := text("axis-label x"), text("axis-label y"); !slices.Equal(x, []string{"agents"}) || !slices.Equal(y, []string{ylabel}) {
			t.Errorf("%s: axis labels %q, %q", name, x, y)
		}
		legend := text("legend")
		for _, mode := range []string{"central", "self-organizing"} {
			if !slices.ContainsFunc(legend, func(l string) bool { return strings.HasSuffix(l, mode) }) {
				t.Errorf("%s: legend %q lacks %s", name, legend, mode)
			}
		}
		groups := root.find(func(n *svgNode) bool { return n.attr("class") == "series" })
		if len(groups) != len(legend) || len(groups) < 2 {
			t.Errorf("%s: %d series, %d legend entries", name, len(groups), len(legend))
		}
		for _, g := range groups {
			paths := g.find(func(n *svgNode) bool { return n.XMLName.Local == "path" })
			markers := g.find(func(n *svgNode) bool { return n.XMLName.Local == "circle" })
			if len(paths) != 1 || len(markers) != 3 {
				t.Errorf("%s: series %q has %d paths and %d points, want 1 and 3", name, g.attr("data-name"), len(paths), len(markers))
			}
		}
		pf, err := os.Open(filepath.Join(out, "swarm-"+name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(pf)
		pf.Close()
		if err != nil {
			t.Fatalf("%s.png: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() != 960 || b.Dy() != 600 {
			t.Errorf("%s.png is %v", name, b)
		}
		// Count pixels on an RGBA copy (one conversion, then plain bytes:
		// img.At per pixel is slow under the race detector).
		rgba := image.NewRGBA(img.Bounds())
		draw.Draw(rgba, rgba.Bounds(), img, img.Bounds().Min, draw.Src)
		ink, series := 0, 0
		bg, c := plot.Background(), plot.SeriesColor(0)
		for i := 0; i+3 < len(rgba.Pix); i += 4 {
			r, g, b := rgba.Pix[i], rgba.Pix[i+1], rgba.Pix[i+2]
			if r != bg.R || g != bg.G || b != bg.B {
				ink++
			}
			if r == c.R && g == c.G && b == c.B {
				series++
			}
		}
		if ink < 5000 || series < 100 {
			t.Errorf("%s.png: %d non-background pixels, %d of the first series' color", name, ink, series)
		}
	}
}

// TestSimCalibrate fits the simulator to a benchmark it produced and to a
// real run directory.
func TestSimCalibrate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bench := filepath.Join(dir, "bench.json")
	data := mustApiary(t, "sim", "swarm", "--agents", "8,32,128", "--tasks", "300", "--median-s", "3", "--p90-s", "9", "--central-msg-s", "0.01", "--json")
	if err := os.WriteFile(bench, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	var c sim.Calibration
	calibrated := mustApiary(t, "sim", "calibrate", "--json", bench)
	if err := json.Unmarshal([]byte(calibrated), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 6 || c.MeanAbsErrorPct > 10 || c.Params.MedianS != 0 && (c.Params.MedianS < 2 || c.Params.MedianS > 4.5) {
		t.Errorf("calibration of a simulated benchmark: %+v", c)
	}
	// Its parameters feed sim swarm.
	params := filepath.Join(dir, "params.json")
	if err := os.WriteFile(params, []byte(calibrated), 0o644); err != nil {
		t.Fatal(err)
	}
	var rep sim.SwarmReport
	if err := json.Unmarshal([]byte(mustApiary(t, "sim", "swarm", "--params", params, "--agents", "16", "--tasks", "50", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Params.MedianS != c.Params.MedianS || rep.Params.Tasks != 50 {
		t.Errorf("--params: median %g (calibrated %g), tasks %d", rep.Params.MedianS, c.Params.MedianS, rep.Params.Tasks)
	}

	// A real run: three command agents that take a while, two in parallel.
	envtest.Command(t, "git")
	repo := filepath.Join(dir, "repo")
	mustExec(t, "", "git", "init", "--quiet", "--initial-branch=main", repo)
	mustExec(t, repo, "git", "commit", "--quiet", "--allow-empty", "-m", "initial")
	plan := `version: 1
max_parallel: 2
agents:
  w: {kind: command, argv: [sh, -c, "sleep 0.3; echo $APIARY_TASK > $APIARY_TASK.txt"]}
tasks:
  - {id: a, objective: a, agent: w, write_scope: [a.txt]}
  - {id: b, objective: b, agent: w, write_scope: [b.txt]}
  - {id: c, objective: c, agent: w, write_scope: [c.txt], deps: [a]}
`
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	var runOut bytes.Buffer
	if code := Main(t.Context(), []string{"run", "--repo", repo, "--json", filepath.Join(dir, "plan.yaml")}, strings.NewReader(""), &runOut, &bytes.Buffer{}); code != 0 {
		t.Fatalf("apiary run: exit %d: %s", code, runOut.String())
	}
	var r runs.Report
	if err := json.Unmarshal(runOut.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	runDir := rundir.Path(repo, r.RunID)
	text := mustApiary(t, "sim", "calibrate", runDir)
	for _, want := range []string{"calibrated on 1 measurements (1 runs, 0 benchmark rows)", "overhead_s", "mean absolute error"} {
		if !strings.Contains(text, want) {
			t.Errorf("calibrate output lacks %q:\n%s", want, text)
		}
	}
	if err := json.Unmarshal([]byte(mustApiary(t, "sim", "calibrate", "--json", runDir)), &c); err != nil {
		t.Fatal(err)
	}
	row := c.Rows[0]
	if row.Kind != "run" || row.Agents != 2 || row.AgentsInferred || row.Tasks != 3 || row.MeasuredS != r.WallS || row.SimulatedS <= 0 {
		t.Errorf("run row %+v (report wall %g)", row, r.WallS)
	}
	// The same run from `apiary run --json` output: no max_parallel, so the
	// agents are inferred.
	runJSON := filepath.Join(dir, "run.json")
	if err := os.WriteFile(runJSON, runOut.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(mustApiary(t, "sim", "calibrate", "--json", runJSON)), &c); err != nil || !c.Rows[0].AgentsInferred {
		t.Errorf("run --json report: %v %+v", err, c.Rows)
	}
}

// mustExec runs a command in dir and fails the test if it fails.
func mustExec(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@apiary.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@apiary.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v: %s", name, args, err, out)
	}
}
