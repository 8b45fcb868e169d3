package syntax

import (
	"strings"
	"testing"
)

// TestCheck: each format's checker passes good text and reports bad text
// at its line; unknown formats are not checked.
func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		format, good, bad string
		line              int // of the bad text's first error
	}{
		{"json", `{"a": [1, 2]}`, "{\n  \"a\": 1,\n}", 3},
		{"yaml", "a: 1\nb: [1, 2]\n", "a: 1\nb: [1, 2\nc: 3\n", 0},
		{"toml", "a = 1\n[t]\nb = \"x\"\n", "a = 1\nb = \n", 2},
		{"go", "package p\n\nfunc f() {}\n", "package p\n\nfunc f( {}\n", 3},
		{"latex", "\\documentclass{article}\n\\begin{document}\nx\n\\end{document}\n", "\\documentclass{article}\n\\begin{document}\n{x\n\\end{document}\n", 0},
	} {
		t.Run(c.format, func(t *testing.T) {
			diags, checked := Check(c.format, c.good)
			if !checked {
				t.Fatalf("%s not checked", c.format)
			}
			for _, d := range diags {
				if d.Severity != "warning" {
					t.Errorf("good %s: %+v", c.format, d)
				}
			}
			diags, _ = Check(c.format, c.bad)
			var errs []Diagnostic
			for _, d := range diags {
				if d.Severity != "warning" {
					errs = append(errs, d)
				}
			}
			if len(errs) == 0 {
				t.Fatalf("bad %s: no error in %+v", c.format, diags)
			}
			if c.line > 0 && errs[0].Line != c.line {
				t.Errorf("bad %s: first error at line %d, want %d: %+v", c.format, errs[0].Line, c.line, errs[0])
			}
		})
	}
	if diags, checked := Check("cobol", "IDENTIFICATION DIVISION."); checked || diags != nil {
		t.Errorf("cobol: %v %v", diags, checked)
	}
}

// FuzzCheck: no text makes a checker panic, and every diagnostic points
// inside the text (a lone \r ends a line for the LaTeX checker).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"{\"a\":", "a: [", "a = ", "package p\nfunc(", "# t\n```", "\\begin{x}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lines := strings.Count(s, "\n") + strings.Count(s, "\r") + 2
		for _, format := range []string{"json", "yaml", "toml", "go", "markdown", "latex"} {
			diags, _ := Check(format, s)
			for _, d := range diags {
				if d.Line < 1 || d.Line > lines || d.Message == "" {
					t.Errorf("%s: %+v for %q", format, d, s)
				}
			}
		}
	})
}
