package review

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goTestJSON = `{"Action":"start","Package":"ex.com/m/calc"}
{"Action":"run","Package":"ex.com/m/calc","Test":"TestAdd"}
{"Action":"output","Package":"ex.com/m/calc","Test":"TestAdd","Output":"=== RUN   TestAdd\n"}
{"Action":"output","Package":"ex.com/m/calc","Test":"TestAdd","Output":"    calc_test.go:9: Add(1, 2) = 4\n"}
{"Action":"fail","Package":"ex.com/m/calc","Test":"TestAdd","Elapsed":0}
{"Action":"run","Package":"ex.com/m/calc","Test":"TestSub/neg"}
{"Action":"fail","Package":"ex.com/m/calc","Test":"TestSub/neg","Elapsed":0}
{"Action":"fail","Package":"ex.com/m/calc","Test":"TestSub","Elapsed":0}
{"Action":"pass","Package":"ex.com/m/calc","Test":"TestMul","Elapsed":0}
{"Action":"output","Package":"ex.com/m/calc","Output":"coverage: 62.5% of statements\n"}
{"Action":"fail","Package":"ex.com/m/calc","Elapsed":0.01}
{"ImportPath":"ex.com/m/broken [ex.com/m/broken.test]","Action":"build-output","Output":"broken/b.go:3:1: syntax error\n"}
{"ImportPath":"ex.com/m/broken [ex.com/m/broken.test]","Action":"build-fail"}
{"Action":"fail","Package":"ex.com/m/broken","Elapsed":0,"FailedBuild":"ex.com/m/broken [ex.com/m/broken.test]"}
{"Action":"output","Package":"ex.com/m","Output":"ex.com/m\t\tcoverage: 0.0% of statements\n"}
{"Action":"skip","Package":"ex.com/m","Elapsed":0}
go: downloading something
`

func TestParseGoTestJSON(t *testing.T) {
	t.Parallel()
	run, err := parseGoTestJSON([]byte(goTestJSON))
	if err != nil {
		t.Fatal(err)
	}
	calc := run.pkgs["ex.com/m/calc"]
	if calc == nil || calc.status != "fail" || calc.coverage == nil || *calc.coverage != 62.5 || calc.failedBuild {
		t.Fatalf("calc = %+v", calc)
	}
	if got := strings.Join(calc.failedTests(), ","); got != "TestAdd,TestSub/neg" {
		t.Errorf("failed leaves = %s", got)
	}
	if out := strings.Join(calc.tests["TestAdd"].output, "\n"); !strings.Contains(out, "Add(1, 2) = 4") {
		t.Errorf("TestAdd output %q", out)
	}
	broken := run.pkgs["ex.com/m/broken"]
	if broken == nil || !broken.failedBuild || !strings.Contains(strings.Join(broken.output, "\n"), "syntax error") {
		t.Errorf("broken = %+v", broken)
	}
	if root := run.pkgs["ex.com/m"]; root == nil || root.status != "skip" || root.coverage == nil || *root.coverage != 0 {
		t.Errorf("root = %+v", root)
	}
	if junk := run.pkgs[""]; junk == nil || junk.output[0] != "go: downloading something" {
		t.Errorf("non-JSON line lost: %+v", junk)
	}
	if _, err := parseGoTestJSON([]byte("{\"Action\": 3}\n")); err == nil {
		t.Error("a malformed event was accepted")
	}
}

func TestParseCoverProfile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		in             string
		stmts, covered int
		bad            bool
	}{
		{"set", "mode: set\nm/a.go:3.20,5.2 2 1\nm/a.go:7.20,9.2 3 0\n", 5, 2, false},
		{"merged blocks", "mode: atomic\nm/a.go:3.20,5.2 2 0\nm/a.go:3.20,5.2 2 4\nm/b c.go:1.1,2.2 1 0\n", 3, 2, false},
		{"empty profile", "mode: set\n", 0, 0, false},
		{"no mode", "m/a.go:3.20,5.2 2 1\n", 0, 0, true},
		{"bad count", "mode: set\nm/a.go:3.20,5.2 2 x\n", 0, 0, true},
		{"negative", "mode: set\nm/a.go:3.20,5.2 -2 1\n", 0, 0, true},
		{"empty", "", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cp, err := parseCoverProfile([]byte(tt.in))
			if (err != nil) != tt.bad {
				t.Fatalf("err = %v, want bad=%v", err, tt.bad)
			}
			if !tt.bad && (cp.statements != tt.stmts || cp.covered != tt.covered) {
				t.Errorf("got %d/%d, want %d/%d", cp.covered, cp.statements, tt.covered, tt.stmts)
			}
		})
	}
}

func FuzzParseGoTestJSON(f *testing.F) {
	f.Add([]byte(goTestJSON))
	f.Add([]byte("{}\n{\"Action\":\"fail\",\"Test\":\"T/\"}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		run, err := parseGoTestJSON(b)
		if err != nil {
			return
		}
		for _, p := range run.pkgs {
			if len(p.output) > maxKeptLines {
				t.Fatalf("kept %d lines", len(p.output))
			}
			for _, name := range p.failedTests() {
				if p.tests[name].status != "fail" {
					t.Fatalf("%s reported failed", name)
				}
			}
		}
	})
}

func FuzzParseCoverProfile(f *testing.F) {
	f.Add([]byte("mode: set\nm/a.go:3.20,5.2 2 1\n"))
	f.Add([]byte("mode: count\nx:1 1 1\nx:1 1 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cp, err := parseCoverProfile(b)
		if err != nil {
			return
		}
		if cp.covered < 0 || cp.covered > cp.statements || cp.percent() < 0 || cp.percent() > 100 {
			t.Fatalf("impossible coverage %+v", cp)
		}
	})
}

// TestFirstError: the place of the first error in go's output, relative to
// the repository, in each form go prints it.
func TestFirstError(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, p := range []string{"calc/calc.go", "calc/calc_test.go"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		out       []string
		file, msg string
		line      int
	}{
		{[]string{"# ex.com/m/calc", "calc/calc.go:3:9: syntax error: unexpected {"}, "calc/calc.go", "syntax error: unexpected {", 3},
		{[]string{"2026/12/01 23:34:42 cover: ../x/calc/calc.go: ../" + filepath.Base(root) + "/calc/calc.go:7:2: expected ')'"}, "calc/calc.go", "expected ')'", 7},
		{[]string{"    calc_test.go:12: Add(1, 2) = 4, want 3"}, "calc/calc_test.go", "Add(1, 2) = 4, want 3", 12},
		{[]string{root + "/calc/calc.go:5:1: undefined: x"}, "calc/calc.go", "undefined: x", 5},
		{[]string{"/elsewhere/x.go:5:1: undefined: x", "nothing.go:0: x", "calc/missing.go:1: x"}, "", "", 0},
	} {
		file, line, msg := firstError(root, "calc", tt.out)
		if file != tt.file || line != tt.line || msg != tt.msg {
			t.Errorf("firstError(%q) = %s:%d %q, want %s:%d %q", tt.out, file, line, msg, tt.file, tt.line, tt.msg)
		}
	}
}

// FuzzFirstError: any output gives a place inside the repository or none.
func FuzzFirstError(f *testing.F) {
	f.Add("calc/calc.go:3:9: syntax error")
	f.Add("../../etc/passwd.go:1: x")
	f.Fuzz(func(t *testing.T, line string) {
		root := t.TempDir()
		file, n, _ := firstError(root, "calc", []string{line})
		if file != "" && (n <= 0 || strings.HasPrefix(file, "..") || filepath.IsAbs(file)) {
			t.Fatalf("%q: %s:%d", line, file, n)
		}
	})
}
