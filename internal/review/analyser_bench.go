package review

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/gate"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// GoBench compares the micro-benchmarks of the change's head with its base
// the way benchstat does: each side's test binaries are built once and run
// Count times, base and head interleaved (alternating which goes first) so
// drift in the machine's speed hits both alike; the samples of each
// benchmark are compared with benchstat's statistics (golang.org/x/perf's
// benchmath, assuming nothing about the distribution: medians and a
// Mann-Whitney U test). Each benchmark present on both sides becomes a
// finding of kind benchmark whose Metric holds the base and head medians
// (ns/op), the change in percent and the p-value; a decision rule judges
// it. The analyser itself only measures (severity info).
type GoBench struct {
	Go string // the go command; default "go"
	// Packages are the packages compared; default: those holding the
	// Go code the change edits (not its tests), so a change is measured
	// where it can make code slower, and a change to no Go code is not.
	Packages  []string
	Pattern   string // -test.bench; default "."
	Benchtime string // -test.benchtime; default "100ms"
	Count     int    // runs per side; default 6
	// Alpha is the significance level; default benchmath's 0.05.
	Alpha float64
	// Timeout bounds the whole comparison; default 20 minutes.
	Timeout time.Duration
}

// NeedsBase implements NeedsBase.
func (GoBench) NeedsBase() bool { return true }

// Quiet implements Quiet: timings are taken with no other analyser
// running.
func (GoBench) Quiet() bool { return true }

// changedPackages are the package patterns ("./dir") of the non-test Go
// files the change adds or edits.
func changedPackages(c *Change) []string {
	seen := map[string]bool{}
	var out []string
	for _, ch := range c.Changes {
		if ch.Status == 'D' || !strings.HasSuffix(ch.Path, ".go") || strings.HasSuffix(ch.Path, "_test.go") {
			continue
		}
		dir := path.Dir(ch.Path)
		if seen[dir] || strings.Contains("/"+dir+"/", "/testdata/") {
			continue
		}
		seen[dir] = true
		if dir == "." {
			out = append(out, ".")
		} else {
			out = append(out, "./"+dir)
		}
	}
	sort.Strings(out)
	return out
}

// benchPkg is one package with benchmarks, on one side.
type benchPkg struct {
	importPath string
	dir        string // absolute
	binary     string
}

// Analyse implements Analyser.
func (g GoBench) Analyse(ctx context.Context, c *Change) ([]Finding, error) {
	if c.BaseDir == "" {
		return nil, fmt.Errorf("%w: benchmark comparison needs the base checkout", ErrAnalyser)
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = 20 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	log := filepath.Join(c.Scratch, "go-bench.log")
	patterns := g.Packages
	if len(patterns) == 0 {
		if patterns = changedPackages(c); len(patterns) == 0 {
			return nil, nil
		}
	}
	sides := map[string]map[string]*benchPkg{}
	for _, side := range []string{"base", "head"} {
		dir := c.HeadDir
		if side == "base" {
			dir = c.BaseDir
		}
		pkgs, err := g.build(ctx, c, dir, side, log, patterns)
		if err != nil {
			return nil, err
		}
		sides[side] = pkgs
	}
	var common []string
	for ip := range sides["head"] {
		if sides["base"][ip] != nil {
			common = append(common, ip)
		}
	}
	sort.Strings(common)
	if len(common) == 0 {
		return nil, nil
	}
	return g.measureConfirmed(ctx, c, sides, common, log)
}

// measureConfirmed measures the packages common to both sides and turns
// the samples into findings.
func (g GoBench) measureConfirmed(ctx context.Context, c *Change, sides map[string]map[string]*benchPkg, common []string, log string) ([]Finding, error) {
	count := g.Count
	if count <= 0 {
		count = 6
	}
	base, head, out, err := g.measure(ctx, c, sides, common, count, log)
	if err != nil {
		return nil, err
	}
	keys, first := g.compare(c, base, head)
	// A slowdown is measured twice: on a shared or virtual machine the
	// speed of a run can jump by half for no reason the change gave, so
	// one lucky series can look consistent and significant. The packages
	// that showed one are measured again, as a fresh series, and only a
	// benchmark slower in both series is significant (with the smaller
	// of the two slowdowns), which squares the chance of a false alarm
	// while a real regression shows in both.
	suspect := map[string]bool{}
	for _, k := range keys {
		if m := first[k].Metric; m.Significant && m.Delta > 0 {
			suspect[k.pkg] = true
		}
	}
	if len(suspect) > 0 {
		var again []string
		for _, ip := range common {
			if suspect[ip] {
				again = append(again, ip)
			}
		}
		base2, head2, out2, err := g.measure(ctx, c, sides, again, count, log)
		if err != nil {
			return nil, err
		}
		out = append(out, out2...)
		_, second := g.compare(c, base2, head2)
		for _, k := range keys {
			f := first[k]
			if !f.Metric.Significant || f.Metric.Delta <= 0 {
				continue
			}
			f2, ok := second[k]
			m := *f.Metric
			switch {
			case !ok:
				m.Significant = false
				f.Evidence += "; not measured again, so not taken for a change"
			case !f2.Metric.Significant || f2.Metric.Delta <= 0:
				m.Significant = false
				f.Evidence += "; measured again: " + f2.Evidence + ", so the first series is not taken for a change"
			default:
				if f2.Metric.Delta < m.Delta {
					m.Base, m.Head, m.Delta = f2.Metric.Base, f2.Metric.Head, f2.Metric.Delta
				}
				if *f2.Metric.P > *m.P {
					m.P = f2.Metric.P
				}
				f.Evidence += "; confirmed by a second series: " + f2.Evidence
			}
			f.Metric = &m
			first[k] = f
		}
	}
	for _, k := range keys {
		out = append(out, first[k])
	}
	return out, nil
}

// measure runs the benchmarks of the packages ips count times per side,
// base and head interleaved, and parses the samples. A head whose
// benchmarks fail becomes a test-failure finding.
func (g GoBench) measure(ctx context.Context, c *Change, sides map[string]map[string]*benchPkg, ips []string, count int, log string) (base, head map[benchKey][]float64, out []Finding, err error) {
	outs := map[string]*bytes.Buffer{"base": {}, "head": {}}
	failed := map[string]bool{}
	for round := range count {
		for _, ip := range ips {
			order := []string{"base", "head"}
			if round%2 == 1 {
				order = []string{"head", "base"}
			}
			for _, side := range order {
				if failed[side+ip] {
					continue
				}
				ok, err := g.runOnce(ctx, sides[side][ip], c.Env, outs[side], log)
				if err != nil {
					return nil, nil, nil, err
				}
				if !ok {
					failed[side+ip] = true
					if side == "head" {
						out = append(out, Finding{Kind: KindTestFailure, Severity: SevHigh, File: dirOrEmpty(pkgDir(modulePath(c.HeadDir), ip)),
							Evidence: fmt.Sprintf("benchmarks of %s fail at the head (log %s):\n%s", ip, log, gate.ReadTail(log, 15))})
					}
				}
			}
		}
	}
	if base, err = benchSamples(outs["base"]); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: base: %v", ErrAnalyser, err)
	}
	if head, err = benchSamples(outs["head"]); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: head: %v", ErrAnalyser, err)
	}
	return base, head, out, nil
}

// build lists the packages of dir that have benchmarks and compiles their
// test binaries into the scratch directory.
func (g GoBench) build(ctx context.Context, c *Change, dir, side, log string, pkgs []string) (map[string]*benchPkg, error) {
	out := map[string]*benchPkg{}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return out, nil
	}
	goBin := g.Go
	if goBin == "" {
		goBin = "go"
	}
	argv := append([]string{goBin, "list", "-e", "-json=ImportPath,Dir,TestGoFiles,XTestGoFiles"}, pkgs...)
	res, err := gate.RunTool(ctx, gate.Tool{Argv: argv, Dir: dir, Env: c.Env, Log: log})
	if err != nil {
		return nil, err
	}
	if res.Exit != 0 {
		return nil, fmt.Errorf("%w: go list at the %s exited %d (log %s)", ErrAnalyser, side, res.Exit, log)
	}
	dec := json.NewDecoder(bytes.NewReader(res.Stdout))
	for i := 0; ; i++ {
		var p struct {
			ImportPath, Dir           string
			TestGoFiles, XTestGoFiles []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%w: go list: %v", ErrAnalyser, err)
		}
		if !hasBenchmarks(p.Dir, append(p.TestGoFiles, p.XTestGoFiles...)) {
			continue
		}
		bin := filepath.Join(c.Scratch, "bench-"+side, strconv.Itoa(i)+".test")
		cres, err := gate.RunTool(ctx, gate.Tool{Argv: []string{goBin, "test", "-c", "-o", bin, p.ImportPath}, Dir: dir, Env: c.Env, Log: log})
		if err != nil {
			return nil, err
		}
		if cres.Exit != 0 {
			if side == "head" {
				return nil, fmt.Errorf("%w: building the benchmarks of %s at the head failed (log %s)", ErrAnalyser, p.ImportPath, log)
			}
			continue // the base does not build: nothing to compare with
		}
		out[p.ImportPath] = &benchPkg{importPath: p.ImportPath, dir: p.Dir, binary: bin}
	}
	return out, nil
}

// hasBenchmarks reports whether any of the test files declares a benchmark.
func hasBenchmarks(dir string, files []string) bool {
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err == nil && bytes.Contains(b, []byte("func Benchmark")) {
			return true
		}
	}
	return false
}

// runOnce runs one package's benchmarks once (in env, as the build), appending
// the output to w.
// It reports false when the binary failed.
func (g GoBench) runOnce(ctx context.Context, p *benchPkg, env []string, w *bytes.Buffer, log string) (bool, error) {
	pattern, bt := g.Pattern, g.Benchtime
	if pattern == "" {
		pattern = "."
	}
	if bt == "" {
		bt = "100ms"
	}
	argv := []string{p.binary, "-test.run=^$", "-test.bench=" + pattern, "-test.benchtime=" + bt, "-test.count=1"}
	res, err := gate.RunTool(ctx, gate.Tool{Argv: argv, Dir: p.dir, Env: env, Log: log})
	if err != nil {
		return false, err
	}
	if res.Exit != 0 {
		gate.AppendLog(log, res.Stdout)
		return false, nil
	}
	fmt.Fprintf(w, "pkg: %s\n", p.importPath)
	w.Write(res.Stdout)
	return true, nil
}

// benchKey identifies a benchmark across sides.
type benchKey struct{ pkg, name string }

// benchSamples parses benchmark output into sec/op samples per benchmark.
func benchSamples(out *bytes.Buffer) (map[benchKey][]float64, error) {
	samples := map[benchKey][]float64{}
	r := benchfmt.NewReader(bytes.NewReader(out.Bytes()), "bench")
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			if v, ok := rec.Value("sec/op"); ok {
				k := benchKey{rec.GetConfig("pkg"), rec.Name.String()}
				samples[k] = append(samples[k], v)
			}
		case *benchfmt.SyntaxError:
			// Lines the format does not know (test log output) are noise.
		}
	}
	return samples, r.Err()
}

// compare turns the samples present on both sides into findings, keyed by
// benchmark, with the keys in order.
func (g GoBench) compare(c *Change, base, head map[benchKey][]float64) ([]benchKey, map[benchKey]Finding) {
	thr := benchmath.DefaultThresholds
	if g.Alpha > 0 {
		thr.CompareAlpha = g.Alpha
	}
	keys := make([]benchKey, 0, len(head))
	for k := range head {
		if base[k] != nil {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].pkg != keys[j].pkg {
			return keys[i].pkg < keys[j].pkg
		}
		return keys[i].name < keys[j].name
	})
	mod := modulePath(c.HeadDir)
	out := map[benchKey]Finding{}
	for _, k := range keys {
		s1, s2 := benchmath.NewSample(base[k], &thr), benchmath.NewSample(head[k], &thr)
		cmp := benchmath.AssumeNothing.Compare(s1, s2)
		b := benchmath.AssumeNothing.Summary(s1, 0.95).Center
		h := benchmath.AssumeNothing.Summary(s2, 0.95).Center
		delta := 0.0
		if b > 0 {
			delta = (h - b) / b * 100
		}
		p := cmp.P
		rounds, slower := pairedRounds(base[k], head[k])
		consistent := rounds > 0 && (slower >= rounds-1 || slower <= 1)
		m := &Metric{Name: MetricSecPerOp, Unit: "ns/op", Base: b * 1e9, Head: h * 1e9, Delta: round1(delta), P: &p,
			Significant: cmp.P < cmp.Alpha && consistent, Rounds: rounds, Slower: slower}
		base, _, _ := strings.Cut(k.name, "/")
		if i := strings.LastIndexByte(base, '-'); i > 0 {
			if _, err := strconv.Atoi(base[i+1:]); err == nil {
				base = base[:i] // the -GOMAXPROCS suffix
			}
		}
		dir := pkgDir(mod, k.pkg)
		file, line := findFunc(c.HeadDir, dir, "Benchmark"+base)
		if file == "" {
			file = dirOrEmpty(dir)
		}
		verdict := "no significant change"
		if m.Significant {
			verdict = fmt.Sprintf("%+.1f%%", delta)
		}
		ev := fmt.Sprintf("Benchmark%s (%s): %s → %s per op, %s (%s; the head slower in %d of %d interleaved rounds)",
			k.name, k.pkg, fmtNs(m.Base), fmtNs(m.Head), verdict, cmp, slower, rounds)
		for _, w := range append(append(s1.Warnings, s2.Warnings...), cmp.Warnings...) {
			ev += "; " + w.Error()
		}
		out[k] = Finding{Kind: KindBenchmark, Severity: SevInfo, File: file, Line: line, Evidence: ev, Metric: m}
	}
	return keys, out
}

// pairedRounds pairs the samples of the rounds both sides ran (round i of
// the base with round i of the head: run back to back, so they share the
// machine's state) and counts the rounds where the head was slower.
func pairedRounds(base, head []float64) (rounds, slower int) {
	if len(base) != len(head) {
		return 0, 0 // a side failed in some round: the pairs do not line up
	}
	for i := range base {
		if head[i] > base[i] {
			slower++
		}
	}
	return len(base), slower
}

// fmtNs renders nanoseconds with a unit that keeps 3–4 digits.
func fmtNs(ns float64) string {
	switch {
	case ns >= 1e9:
		return strconv.FormatFloat(ns/1e9, 'f', 3, 64) + "s"
	case ns >= 1e6:
		return strconv.FormatFloat(ns/1e6, 'f', 3, 64) + "ms"
	case ns >= 1e3:
		return strconv.FormatFloat(ns/1e3, 'f', 3, 64) + "µs"
	}
	return strconv.FormatFloat(ns, 'f', 2, 64) + "ns"
}
