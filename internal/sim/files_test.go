package sim

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseModes(t *testing.T) {
	t.Parallel()
	if m, err := ParseModes("both"); err != nil || !slices.Equal(m, []Mode{ModeCentral, ModeSelf}) {
		t.Errorf("both: %v %v", m, err)
	}
	if m, err := ParseModes("self"); err != nil || !slices.Equal(m, []Mode{ModeSelf}) {
		t.Errorf("self: %v %v", m, err)
	}
	var pe *ParamError
	if _, err := ParseModes("all"); !errors.As(err, &pe) || pe.Param != "mode" || pe.Value != `"all"` {
		t.Errorf("all: %v", err)
	}
}

// TestReadFiles: points and reports come from a file or stdin, a run
// directory's report from runDir; a file's parse error names it.
func TestReadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pts := filepath.Join(dir, "pts.txt")
	if err := os.WriteFile(pts, []byte("1 100\n2 60\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("one hundred\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := ReadPoints(pts, nil); err != nil || len(p) != 2 {
		t.Errorf("points from a file: %v %v", p, err)
	}
	if p, err := ReadPoints("-", strings.NewReader("4 30\n")); err != nil || len(p) != 1 || p[0].M != 4 {
		t.Errorf("points from stdin: %v %v", p, err)
	}
	if _, err := ReadPoints(bad, nil); err == nil || !strings.HasPrefix(err.Error(), bad+": ") {
		t.Errorf("bad points: %v", err)
	}

	report := filepath.Join(dir, "run.json")
	if err := os.WriteFile(report, []byte(runReport), 0o644); err != nil {
		t.Fatal(err)
	}
	noRunDir := func(string) ([]byte, error) { t.Error("a file read as a run directory"); return nil, nil }
	if ms, err := ReadReport(report, nil, noRunDir); err != nil || len(ms) == 0 {
		t.Errorf("a report file: %v %v", ms, err)
	}
	if ms, err := ReadReport("-", strings.NewReader(runReport), noRunDir); err != nil || len(ms) == 0 {
		t.Errorf("a report on stdin: %v %v", ms, err)
	}
	var asked string
	runDir := func(d string) ([]byte, error) { asked = d; return []byte(runReport), nil }
	if ms, err := ReadReport(dir, nil, runDir); err != nil || len(ms) == 0 || asked != dir {
		t.Errorf("a run directory: %v %v (asked %q)", ms, err, asked)
	}
}

func TestWriteCharts(t *testing.T) {
	t.Parallel()
	rep, err := SweepSwarm(func() SwarmParams { p := DefaultSwarmParams(); p.Tasks = 20; return p }(), []int{2, 4}, []Mode{ModeSelf})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	var written []string
	write := func(p string, data []byte) error {
		written = append(written, filepath.Base(p))
		return os.WriteFile(p, data, 0o644)
	}
	if err := WriteCharts(dir, "swarm-", rep.Charts(), write); err != nil {
		t.Fatal(err)
	}
	if len(written) != 2*len(rep.Charts()) || !slices.Contains(written, "swarm-"+rep.Charts()[0].Name+".svg") {
		t.Errorf("written %v", written)
	}
}
