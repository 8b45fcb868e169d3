package review

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/gate"
)

// GoTest runs the Go tests of the change's head and base (`go test -json
// -cover -coverprofile`) and reports failing tests and the coverage delta.
// A test failing at the head is high severity, medium if it fails at the
// base too (the change did not cause it); a package that does not build is
// a build-failure at the file and line of its first error. Coverage is reported as a finding whose Metric carries
// base, head and delta in percentage points of statements, for the whole
// module and per package that lost coverage.
type GoTest struct {
	Go       string        // the go command; default "go"
	Packages []string      // default ./...
	Args     []string      // extra go test flags (-race, -short, -tags=...)
	Timeout  time.Duration // per run; default 10 minutes
}

// NeedsBase implements NeedsBase: the base run gives the coverage delta.
func (GoTest) NeedsBase() bool { return true }

// goSide is one side's run.
type goSide struct {
	ran      bool // the side has a go.mod and was run
	run      *goTestRun
	profile  *coverProfile
	timedOut bool
	log      string
}

// Analyse implements Analyser.
func (g GoTest) Analyse(ctx context.Context, c *Change) ([]Finding, error) {
	head, err := g.runSide(ctx, c, c.HeadDir, "head")
	if err != nil {
		return nil, err
	}
	if !head.ran {
		return nil, nil // not a Go module at the head
	}
	base := &goSide{}
	if c.BaseDir != "" {
		if base, err = g.runSide(ctx, c, c.BaseDir, "base"); err != nil {
			return nil, err
		}
	}
	mod := modulePath(c.HeadDir)
	var out []Finding
	if head.timedOut {
		out = append(out, Finding{Kind: KindTestFailure, Severity: SevHigh,
			Evidence: fmt.Sprintf("go test timed out after %v at the head (log %s)", g.timeout(), head.log)})
	}
	names := make([]string, 0, len(head.run.pkgs))
	for n := range head.run.pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		p := head.run.pkgs[name]
		var bp *goPkgResult
		if base.run != nil {
			bp = base.run.pkgs[name]
		}
		out = append(out, g.pkgFindings(c, mod, name, p, bp)...)
	}
	out = append(out, coverageFindings(mod, head, base)...)
	return out, nil
}

func (g GoTest) timeout() time.Duration {
	if g.Timeout > 0 {
		return g.Timeout
	}
	return 10 * time.Minute
}

// runSide runs go test in dir; a dir without go.mod is not run.
func (g GoTest) runSide(ctx context.Context, c *Change, dir, side string) (*goSide, error) {
	s := &goSide{log: filepath.Join(c.Scratch, "go-test-"+side+".log")}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return s, nil
	}
	s.ran = true
	prof := filepath.Join(c.Scratch, "cover-"+side+".out")
	goBin := g.Go
	if goBin == "" {
		goBin = "go"
	}
	argv := []string{goBin, "test", "-json", "-count=1", "-cover", "-coverprofile=" + prof}
	argv = append(argv, g.Args...)
	pkgs := g.Packages
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	argv = append(argv, pkgs...)
	res, err := gate.RunTool(ctx, gate.Tool{Argv: argv, Dir: dir, Env: c.Env, Log: s.log, Timeout: g.timeout()})
	if err != nil {
		return nil, err
	}
	s.timedOut = res.TimedOut
	if s.run, err = parseGoTestJSON(res.Stdout); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrAnalyser, side, err)
	}
	if b, err := os.ReadFile(prof); err == nil {
		if cp, err := parseCoverProfile(b); err == nil {
			s.profile = &cp
		}
	}
	return s, nil
}

// pkgFindings reports one package's failures at the head.
func (g GoTest) pkgFindings(c *Change, mod, name string, p, bp *goPkgResult) []Finding {
	if p.status != "fail" && !p.failedBuild {
		return nil
	}
	dir := pkgDir(mod, name)
	var out []Finding
	failed := p.failedTests()
	if p.failedBuild || len(failed) == 0 {
		sev := SevHigh
		if bp != nil && (bp.failedBuild || bp.status == "fail" && len(bp.failedTests()) == 0) {
			sev = SevMedium
		}
		what := "fails without a failing test (panic, TestMain or a vet error)"
		if p.failedBuild {
			what = "does not build"
		}
		pkg := name
		if pkg == "" {
			pkg = "the module"
		}
		file, line, msg := firstError(c.HeadDir, dir, p.output)
		if file == "" {
			file = dirOrEmpty(dir)
		}
		if msg != "" {
			what += ": " + msg
		}
		out = append(out, Finding{Kind: KindBuildFailure, Severity: sev, File: file, Line: line,
			Evidence: fmt.Sprintf("package %s %s at the head:\n%s", pkg, what, strings.Join(p.output, "\n"))})
	}
	for _, t := range failed {
		sev, note := SevHigh, ""
		if bp != nil && bp.tests[t] != nil && bp.tests[t].status == "fail" {
			sev, note = SevMedium, " (it fails at the base too)"
		}
		// The place of the failing check, as the test's output names it;
		// else where the test is declared.
		file, line, _ := firstError(c.HeadDir, dir, p.tests[t].output)
		if file == "" {
			top, _, _ := strings.Cut(t, "/")
			file, line = findFunc(c.HeadDir, dir, top)
		}
		if file == "" {
			file = dirOrEmpty(dir)
		}
		out = append(out, Finding{Kind: KindTestFailure, Severity: sev, File: file, Line: line,
			Evidence: fmt.Sprintf("%s in %s fails at the head%s:\n%s", t, name, note, strings.Join(p.tests[t].output, "\n"))})
	}
	return out
}

// dirOrEmpty turns the module root "." into "" (no file).
func dirOrEmpty(dir string) string {
	if dir == "." {
		return ""
	}
	return dir
}

// coverageFindings compares the sides' coverage: the total, then every
// package whose coverage dropped.
func coverageFindings(mod string, head, base *goSide) []Finding {
	var out []Finding
	switch {
	case head.profile != nil && base.profile != nil:
		h, b := head.profile.percent(), base.profile.percent()
		out = append(out, Finding{Kind: KindCoverage, Severity: coverageSeverity(h - b),
			Evidence: fmt.Sprintf("statement coverage %.1f%% → %.1f%% (%+.1f pp; %d → %d statements)", b, h, h-b, base.profile.statements, head.profile.statements),
			Metric:   &Metric{Name: MetricCoverage, Unit: "%", Base: round1(b), Head: round1(h), Delta: round1(h - b)}})
	case head.profile != nil:
		out = append(out, Finding{Kind: KindCoverage, Severity: SevInfo,
			Evidence: fmt.Sprintf("statement coverage %.1f%% at the head; no base measurement", head.profile.percent())})
	}
	if base.run == nil {
		return out
	}
	var names []string
	for n := range head.run.pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		hp, bp := head.run.pkgs[n], base.run.pkgs[n]
		if bp == nil || hp.coverage == nil || bp.coverage == nil || *hp.coverage >= *bp.coverage {
			continue
		}
		d := *hp.coverage - *bp.coverage
		out = append(out, Finding{Kind: KindCoverage, Severity: SevLow, File: dirOrEmpty(pkgDir(mod, n)),
			Evidence: fmt.Sprintf("package %s coverage %.1f%% → %.1f%% (%+.1f pp)", n, *bp.coverage, *hp.coverage, d),
			Metric:   &Metric{Name: MetricPackageCoverage, Unit: "%", Base: *bp.coverage, Head: *hp.coverage, Delta: round1(d)}})
	}
	return out
}

func coverageSeverity(delta float64) Severity {
	if delta < 0 {
		return SevLow
	}
	return SevInfo
}

// round1 rounds to one decimal, as go test prints coverage.
func round1(v float64) float64 {
	if v < 0 {
		return -round1(-v)
	}
	return float64(int64(v*10+0.5)) / 10
}

// errorLine finds "file.go:12:5: message" (compilers, vet; the cover
// tool prefixes a time and its own name) and "    file_test.go:12:
// message" (a failing test's output) in a line.
var errorLine = regexp.MustCompile(`([^\s:]+\.go):([0-9]+)(?::[0-9]+)?: (.*)$`)

// firstError finds the first output line that names a Go file and line,
// and returns that place relative to the repository (the file must exist
// at the head: relative to the module root, where go test ran, or to the
// package's directory) and its message.
func firstError(root, dir string, output []string) (string, int, string) {
	for _, l := range output {
		m := errorLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[2])
		if err != nil || n <= 0 {
			continue
		}
		var cands []string
		if filepath.IsAbs(m[1]) {
			cands = []string{m[1]}
		} else {
			cands = []string{filepath.Join(root, m[1]), filepath.Join(root, filepath.FromSlash(dir), m[1])}
		}
		for _, abs := range cands {
			rel, err := filepath.Rel(root, abs)
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				continue
			}
			if fi, err := os.Stat(abs); err == nil && fi.Mode().IsRegular() {
				return filepath.ToSlash(rel), n, strings.TrimSpace(m[3])
			}
		}
	}
	return "", 0, ""
}
