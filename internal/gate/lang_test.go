package gate

import (
	"slices"
	"strings"
	"testing"
)

func TestCodeLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lang Lang
		src  string
		want []string
	}{
		{LangGo, "a // c\nb /* x\ny */ c\n", []string{"a ", "b ", "  c"}},
		{LangGo, "s := \"// not a comment\" // c\n", []string{"s := \"// not a comment\" "}},
		{LangGo, "r := `raw\nt.Fatal(x)\n` + y\n", []string{"r := `raw", "", "` + y"}},
		{LangGo, "c := '\"' // q\n", []string{"c := '\"' "}},
		{LangJS, "it(\"a // b\", () => {}) // c\nconst s = `x\n${expect(1)}\n`;\n", []string{"it(\"a // b\", () => {}) ", "const s = `x", "", "`;"}},
		{LangPython, "x = 1  # c\n\"\"\"doc\ndef test_x():\n\"\"\"\ns = '#'\n", []string{"x = 1  ", "\"\"\"doc", "", "\"\"\"", "s = '#'"}},
		{LangPython, "s = \"esc \\\" # still string\"\n", []string{"s = \"esc \\\" # still string\""}},
		{LangGo, "no newline", []string{"no newline"}},
		{LangGo, "", []string{""}},
	}
	for _, tt := range tests {
		if got := codeLines(tt.src, tt.lang); !slices.Equal(got, tt.want) {
			t.Errorf("codeLines(%q, %v) = %q, want %q", tt.src, tt.lang, got, tt.want)
		}
	}
}

func TestSourceLang(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		path string
		want Lang
	}{
		{"main.go", LangGo},
		{"a/b_test.go", LangGo},
		{"x.py", LangPython},
		{"web/a.js", LangJS}, {"a.jsx", LangJS}, {"a.mjs", LangJS}, {"a.cjs", LangJS},
		{"a.ts", LangJS}, {"a.tsx", LangJS}, {"a.mts", LangJS}, {"a.cts", LangJS},
		{"a.go.txt", LangNone}, {"README.md", LangNone}, {"go.mod", LangNone}, {"Makefile", LangNone},
		{"src/lib.rs", LangNone}, {"a.pyc", LangNone}, {"dir.go/file", LangNone},
	} {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			if got := SourceLang(tt.path); got != tt.want {
				t.Errorf("SourceLang(%q) = %v, want %v", tt.path, got, tt.want)
			}
		})
	}
}

func TestTestFileLang(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		path string
		want Lang
	}{
		// Go: the go command's rule.
		{"a/b_test.go", LangGo},
		{"b_test.go", LangGo},
		{"a/b.go", LangNone},
		{"test_util.go", LangNone},       // only Python's runners collect test_*
		{"a/b.test.go", LangNone},        // only JS's runners collect *.test.*
		{"a/b.spec.go", LangNone},        // likewise *.spec.*
		{"tests/helper.go", LangNone},    // Go has no test directories
		{"testdata/x_test.go", LangNone}, // the go command ignores testdata
		{"pkg/testdata/sub/x_test.go", LangNone},
		{"testdata/x_test.go.txt", LangNone},
		// Python: pytest's and unittest's defaults.
		{"test_x.py", LangPython},
		{"pkg/test_x.py", LangPython},
		{"x_test.py", LangPython},
		{"conftest.py", LangPython},
		{"pkg/conftest.py", LangPython},
		{"pkg/tests/helpers.py", LangPython},
		{"test/helpers.py", LangPython},
		{"x.py", LangNone},
		{"pkg/x.test.py", LangNone},
		{"pkg/testing.py", LangNone},
		{"pkg/latest/x.py", LangNone}, // a directory name that merely contains "test"
		// JS/TS: Jest, Vitest, Mocha and Jasmine's defaults.
		{"src/a.test.ts", LangJS},
		{"src/a.spec.jsx", LangJS},
		{"src/a.test.mjs", LangJS},
		{"src/a.spec.cts", LangJS},
		{"src/__tests__/a.js", LangJS},
		{"test/a.js", LangJS},
		{"tests/e2e/a.ts", LangJS},
		{"src/a.ts", LangNone},
		{"src/test_a.js", LangNone},
		{"src/a.test.util.js", LangNone}, // the marker must come just before the extension
		{"src/a.test.json", LangNone},
		{"src/contest/a.js", LangNone},
		// Other languages are not read by the gates.
		{"tests/integration.rs", LangNone},
		{"src/__tests__/a.snap", LangNone},
		{"test/README.md", LangNone},
	} {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			if got := TestFileLang(tt.path); got != tt.want {
				t.Errorf("TestFileLang(%q) = %v, want %v", tt.path, got, tt.want)
			}
			if got := IsTestFile(tt.path); got != (tt.want != LangNone) {
				t.Errorf("IsTestFile(%q) = %v", tt.path, got)
			}
		})
	}
}

func TestLangString(t *testing.T) {
	t.Parallel()
	for l, want := range map[Lang]string{LangNone: "", LangGo: "Go", LangPython: "Python", LangJS: "JS/TS", LangJS + 1: "", -1: ""} {
		if got := l.String(); got != want {
			t.Errorf("Lang(%d).String() = %q, want %q", int(l), got, want)
		}
	}
}

// FuzzCodeLines: the scanner never panics, keeps the line count and never
// makes a line longer.
func FuzzCodeLines(f *testing.F) {
	f.Add("func TestX(t *testing.T) { t.Fatal(`a\nb`) } /* c */\n", 0)
	f.Add("def test_x():\n    '''doc\n'''\n    assert 1  # c\n", 1)
	f.Add("it('x', () => { expect(`a${b}`) }) // c\n", 2)
	f.Fuzz(func(t *testing.T, src string, which int) {
		l := []Lang{LangGo, LangPython, LangJS}[uint(which)%3]
		got := codeLines(src, l)
		in := strings.Split(src, "\n")
		if strings.HasSuffix(src, "\n") {
			in = in[:len(in)-1]
		}
		if len(in) == 0 {
			in = []string{""}
		}
		if len(got) != len(in) {
			t.Fatalf("%d lines out of %d: %q", len(got), len(in), src)
		}
		for i := range got {
			if len(got[i]) > len(in[i]) {
				t.Fatalf("line %d grew: %q → %q", i, in[i], got[i])
			}
		}
	})
}
