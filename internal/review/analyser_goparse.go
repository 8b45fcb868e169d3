package review

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// goTestEvent is one line of `go test -json` (test2json) output, including
// the build events Go 1.24 added.
type goTestEvent struct {
	Action      string
	Package     string
	ImportPath  string // build-output, build-fail
	Test        string
	Output      string
	FailedBuild string
}

// goTestRun is what one `go test -json` run reported, per package.
type goTestRun struct {
	pkgs map[string]*goPkgResult
}

// goPkgResult is one package's outcome.
type goPkgResult struct {
	status      string // pass, fail, skip ("" if the run ended without one)
	failedBuild bool
	coverage    *float64 // statement coverage in percent, when reported
	tests       map[string]*goTestResult
	output      []string // package-level and build output, last lines
}

// goTestResult is one test's outcome.
type goTestResult struct {
	status string // pass, fail, skip
	output []string
}

// maxKeptLines bounds the output lines kept per test and package.
const maxKeptLines = 40

var coverageRE = regexp.MustCompile(`coverage: ([0-9]+(?:\.[0-9]+)?)% of statements`)

// parseGoTestJSON reads `go test -json` output. Lines that are not JSON
// events (a toolchain message on stdout) are kept as the output of the
// package "", so nothing is lost; a malformed event line is an error.
func parseGoTestJSON(data []byte) (*goTestRun, error) {
	run := &goTestRun{pkgs: map[string]*goPkgResult{}}
	pkg := func(name string) *goPkgResult {
		p := run.pkgs[name]
		if p == nil {
			p = &goPkgResult{tests: map[string]*goTestResult{}}
			run.pkgs[name] = p
		}
		return p
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' {
			p := pkg("")
			p.output = keep(p.output, string(line))
			continue
		}
		var ev goTestEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("go test -json line %d: %w", n, err)
		}
		name := ev.Package
		if name == "" {
			name = ev.ImportPath
		}
		// A build event's ImportPath may carry " [pkg.test]".
		name, _, _ = strings.Cut(name, " ")
		p := pkg(name)
		switch ev.Action {
		case "build-output":
			p.output = keep(p.output, strings.TrimRight(ev.Output, "\n"))
		case "build-fail":
			p.failedBuild = true
		case "output":
			out := strings.TrimRight(ev.Output, "\n")
			if ev.Test != "" {
				t := p.test(ev.Test)
				t.output = keep(t.output, out)
				continue
			}
			if m := coverageRE.FindStringSubmatch(out); m != nil {
				if v, err := strconv.ParseFloat(m[1], 64); err == nil {
					p.coverage = &v
				}
			}
			p.output = keep(p.output, out)
		case "pass", "fail", "skip":
			if ev.Test != "" {
				p.test(ev.Test).status = ev.Action
				continue
			}
			p.status = ev.Action
			if ev.FailedBuild != "" {
				p.failedBuild = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("go test -json: %w", err)
	}
	return run, nil
}

func (p *goPkgResult) test(name string) *goTestResult {
	t := p.tests[name]
	if t == nil {
		t = &goTestResult{}
		p.tests[name] = t
	}
	return t
}

// keep appends line to lines, keeping the last maxKeptLines.
func keep(lines []string, line string) []string {
	lines = append(lines, line)
	if len(lines) > maxKeptLines {
		lines = append(lines[:0], lines[len(lines)-maxKeptLines:]...)
	}
	return lines
}

// failedTests returns the names of the package's failed tests that have no
// failed subtest (the leaves of the failure), sorted.
func (p *goPkgResult) failedTests() []string {
	var out []string
	for name, t := range p.tests {
		if t.status != "fail" {
			continue
		}
		leaf := true
		for other, o := range p.tests {
			if o.status == "fail" && strings.HasPrefix(other, name+"/") {
				leaf = false
				break
			}
		}
		if leaf {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// coverProfile is a parsed coverage profile.
type coverProfile struct {
	statements, covered int
}

// percent returns the statement coverage in percent (0 when there are no
// statements).
func (c coverProfile) percent() float64 {
	if c.statements == 0 {
		return 0
	}
	return 100 * float64(c.covered) / float64(c.statements)
}

// parseCoverProfile reads a coverage profile (`go test -coverprofile`): a
// "mode:" line, then "file:l.c,l.c statements count" per block. A block
// listed more than once (several test binaries cover one package) counts
// once, covered if any listing has a non-zero count.
func parseCoverProfile(data []byte) (coverProfile, error) {
	type block struct {
		stmts   int
		covered bool
	}
	blocks := map[string]*block{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	first := true
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if first {
			first = false
			if !strings.HasPrefix(line, "mode: ") {
				return coverProfile{}, fmt.Errorf("coverage profile line %d: want a mode line, got %q", n, clipLine(line))
			}
			continue
		}
		// The file name may contain spaces: split from the right.
		i := strings.LastIndexByte(line, ' ')
		j := -1
		if i > 0 {
			j = strings.LastIndexByte(line[:i], ' ')
		}
		if j <= 0 {
			return coverProfile{}, fmt.Errorf("coverage profile line %d: malformed %q", n, clipLine(line))
		}
		stmts, err1 := strconv.Atoi(line[j+1 : i])
		count, err2 := strconv.ParseInt(line[i+1:], 10, 64)
		pos := line[:j]
		if err1 != nil || err2 != nil || stmts < 0 || stmts > 1<<30 || count < 0 || !strings.Contains(pos, ":") {
			return coverProfile{}, fmt.Errorf("coverage profile line %d: malformed %q", n, clipLine(line))
		}
		b := blocks[pos]
		if b == nil {
			b = &block{stmts: stmts}
			blocks[pos] = b
		}
		b.covered = b.covered || count > 0
	}
	if err := sc.Err(); err != nil {
		return coverProfile{}, fmt.Errorf("coverage profile: %w", err)
	}
	if first {
		return coverProfile{}, fmt.Errorf("coverage profile: empty")
	}
	var cp coverProfile
	for _, b := range blocks {
		cp.statements += b.stmts
		if b.covered {
			cp.covered += b.stmts
		}
	}
	return cp, nil
}

var moduleRE = regexp.MustCompile(`(?m)^\s*module\s+"?([^"\s]+)"?\s*(?://.*)?$`)

// modulePath returns the module path declared by dir/go.mod, or "".
func modulePath(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return ""
	}
	m := moduleRE.FindSubmatch(b)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// pkgDir maps an import path of module mod to its directory relative to
// the module root ("." for the root package), or "" if it is not in mod.
func pkgDir(mod, importPath string) string {
	switch {
	case mod == "":
		return ""
	case importPath == mod:
		return "."
	case strings.HasPrefix(importPath, mod+"/"):
		return importPath[len(mod)+1:]
	}
	return ""
}

// findFunc returns the file (relative to root) and line where func name is
// declared in the Go files of dir, test files first; "" if not found.
func findFunc(root, dir, name string) (string, int) {
	if dir == "" {
		return "", 0
	}
	entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
	if err != nil {
		return "", 0
	}
	re := regexp.MustCompile(`^func\s+(?:\([^)]*\)\s*)?` + regexp.QuoteMeta(name) + `\s*[\[(]`)
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
			files = append(files, e.Name())
		}
	}
	sort.SliceStable(files, func(i, j int) bool {
		return strings.HasSuffix(files[i], "_test.go") && !strings.HasSuffix(files[j], "_test.go")
	})
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dir), f))
		if err != nil {
			continue
		}
		for i, l := range strings.Split(string(b), "\n") {
			if re.MatchString(l) {
				return joinRel(dir, f), i + 1
			}
		}
	}
	return "", 0
}

// joinRel joins a relative directory ("." for the root) and a name.
func joinRel(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	return dir + "/" + name
}
