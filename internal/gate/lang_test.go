package gate

import (
	"slices"
	"strings"
	"testing"
)

func TestCodeLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lang lang
		src  string
		want []string
	}{
		{langGo, "a // c\nb /* x\ny */ c\n", []string{"a ", "b ", "  c"}},
		{langGo, "s := \"// not a comment\" // c\n", []string{"s := \"// not a comment\" "}},
		{langGo, "r := `raw\nt.Fatal(x)\n` + y\n", []string{"r := `raw", "", "` + y"}},
		{langGo, "c := '\"' // q\n", []string{"c := '\"' "}},
		{langJS, "it(\"a // b\", () => {}) // c\nconst s = `x\n${expect(1)}\n`;\n", []string{"it(\"a // b\", () => {}) ", "const s = `x", "", "`;"}},
		{langPython, "x = 1  # c\n\"\"\"doc\ndef test_x():\n\"\"\"\ns = '#'\n", []string{"x = 1  ", "\"\"\"doc", "", "\"\"\"", "s = '#'"}},
		{langPython, "s = \"esc \\\" # still string\"\n", []string{"s = \"esc \\\" # still string\""}},
		{langGo, "no newline", []string{"no newline"}},
		{langGo, "", []string{""}},
	}
	for _, tt := range tests {
		if got := codeLines(tt.src, tt.lang); !slices.Equal(got, tt.want) {
			t.Errorf("codeLines(%q, %v) = %q, want %q", tt.src, tt.lang, got, tt.want)
		}
	}
}

func TestTestLang(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]lang{
		"a/b_test.go": langGo, "a/b.go": langNone, "test_x.py": langPython, "x_test.py": langPython,
		"pkg/tests/helpers.py": langPython, "conftest.py": langPython, "x.py": langNone,
		"src/a.test.ts": langJS, "src/a.spec.jsx": langJS, "src/__tests__/a.js": langJS, "src/a.ts": langNone,
		"testdata/x_test.go.txt": langNone,
	} {
		if got := testLang(p); got != want {
			t.Errorf("testLang(%q) = %v, want %v", p, got, want)
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
		l := []lang{langGo, langPython, langJS}[uint(which)%3]
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
