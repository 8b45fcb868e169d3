package sim

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// ParseModes reads a coordination mode: central, self, or both (central
// then self).
func ParseModes(s string) ([]Mode, error) {
	switch s {
	case "central", "self":
		return []Mode{Mode(s)}, nil
	case "both":
		return []Mode{ModeCentral, ModeSelf}, nil
	}
	return nil, paramErr("mode", strconv.Quote(s), "central, self or both")
}

// ReadPoints reads the measurements of a USL fit (see ParsePoints) from the
// file name, or from stdin when name is "-".
func ReadPoints(name string, stdin io.Reader) ([]Point, error) {
	if name == "-" {
		return ParsePoints(stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pts, err := ParsePoints(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return pts, nil
}

// ReadReport reads the measurements of one report for Calibrate (see
// ParseReport): a file, stdin when path is "-", or a run directory, whose
// report runDir renders.
func ReadReport(path string, stdin io.Reader, runDir func(dir string) ([]byte, error)) ([]Measurement, error) {
	if path == "-" {
		data, err := io.ReadAll(io.LimitReader(stdin, maxReportBytes+1))
		if err != nil {
			return nil, err
		}
		return ParseReport("stdin", data)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	read := os.ReadFile
	if fi.IsDir() {
		read = runDir
	}
	data, err := read(path)
	if err != nil {
		return nil, err
	}
	return ParseReport(path, data)
}

// WriteCharts writes each chart as DIR/PREFIX+NAME.svg and .png through
// write (which should replace a file atomically), making dir first.
func WriteCharts(dir, prefix string, charts []NamedChart, write func(path string, data []byte) error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range charts {
		svg, err := c.Chart.SVG()
		if err != nil {
			return fmt.Errorf("chart %s: %w", c.Name, err)
		}
		png, err := c.Chart.PNG()
		if err != nil {
			return fmt.Errorf("chart %s: %w", c.Name, err)
		}
		for ext, data := range map[string][]byte{".svg": svg, ".png": png} {
			if err := write(filepath.Join(dir, prefix+c.Name+ext), data); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadParamsFile reads the parameters in the JSON file name over base and
// the conditions they were fitted under (see ParseParamsFile); a problem
// of the file's content names the file.
func ReadParamsFile(name string, base SwarmParams) (SwarmParams, []FitCondition, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return base, nil, err
	}
	p, conds, err := ParseParamsFile(data, base)
	if err != nil {
		return p, nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, conds, nil
}

// Warnings say, for each condition p departs from, that the parameters
// from source were fitted otherwise (see FitCondition.Warning), each
// prefixed with source.
func Warnings(source string, conds []FitCondition, p SwarmParams) []string {
	var out []string
	for _, c := range conds {
		if w := c.Warning(p); w != "" {
			out = append(out, source+": "+w)
		}
	}
	return out
}
