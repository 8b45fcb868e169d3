package durable_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/durable"
)

// brokenPython is a PythonChecker that cannot run.
type brokenPython struct{}

func (brokenPython) CheckPython(context.Context, string) ([]durable.Diagnostic, error) {
	return nil, durable.ErrPythonUnavailable
}

func TestValidate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{Python: brokenPython{}})
	type diag struct {
		line int
		sev  string
		msg  string
	}
	for _, tc := range []struct {
		hint, content string
		valid         bool
		want          []diag // prefix of the findings, in order
	}{
		{"latex", "}\n", false, []diag{{1, "error", "Unexpected closing brace"}}},
		{"latex", "{\n{\n", false, []diag{{3, "error", "Unclosed braces: 2"}}},
		{"latex", "\\end{x}\n", false, []diag{{1, "error", `\end{x} without matching`}}},
		{"latex", "\\begin{a}\n\\end{b}\n", false, []diag{{2, "error", `\end{b} mismatches \begin{a} opened at line 1`}}},
		{"latex", "\\documentclass{a}\\begin{document}see https://x.org/a%20b and a_b\n\\end{document}", true,
			[]diag{{1, "warning", "Unescaped '%' in URL"}, {1, "warning", "Unescaped '_'"}}},
		{"latex", "\\documentclass{a}\\begin{document}$a_b$ \\url{a_b}\n% c_d\n\\end{document}", true, nil},
		{"markdown", "```\ncode\n````\ntext\n~~~\n", false, []diag{{5, "error", "code fence opened at line 5"}}},
		{"markdown", "````\n```\n````\n", true, nil},
		{"go", "package p\nfunc (\n", false, []diag{{2, "error", ""}}},
		{"toml", "[a]\nb = \"x\"\nb = 1\n", false, []diag{{3, "error", ""}}},
		{"yaml", "a: 1\n b: 2\n", false, []diag{{2, "error", ""}}},
		{"json", "{\n  \"a\": 1,\n}", false, []diag{{3, "error", ""}}},
	} {
		r, err := f.w.Validate(t.Context(), durable.ValidateParams{Content: tc.content, FormatHint: &tc.hint})
		must(t, err)
		errs := r["errors"].([]map[string]any)
		if r["valid"] != tc.valid || r["ok"] != true || len(errs) < len(tc.want) {
			t.Errorf("%s %q: %v", tc.hint, tc.content, r)
			continue
		}
		if tc.want == nil && len(errs) != 0 {
			t.Errorf("%s %q: unexpected %v", tc.hint, tc.content, errs)
		}
		for i, d := range tc.want {
			e := errs[i]
			if e["line"] != d.line || e["severity"] != d.sev || !strings.Contains(e["message"].(string), d.msg) {
				t.Errorf("%s %q: finding %d = %v, want %+v", tc.hint, tc.content, i, e, d)
			}
		}
	}
	r, err := f.w.Validate(t.Context(), durable.ValidateParams{Content: "def f(:", FormatHint: strp("python")})
	must(t, err)
	if r["unsupported"] != true || r["ok"] != true {
		t.Fatalf("python without python3: %v", r)
	}
}

// TestYAMLErrorPosition: rw.validate puts a YAML error where libyaml's
// problem mark is, as PyYAML reports it (yaml.safe_load_all, PyYAML 6.0.3:
// the line and column below are what it printed for each document), not on
// the line of the enclosing construct with no column, as yaml.v3 says.
func TestYAMLErrorPosition(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	for _, tc := range []struct {
		doc       string
		line, col int
	}{
		{"a: [1, 2\nb: 3\n", 2, 2},     // expected ',' or ']', but got ':'
		{"key: value\n- item\n", 2, 1}, // expected <block end>, but found '-'
		{"a:\n  - x\n - y\n", 3, 2},    // expected <block end>, but found '<block sequence start>'
		{"a: 1\n b: 2\n", 2, 3},        // mapping values are not allowed here
		{"a: b: c\n", 1, 5},
		{"foo: bar\n  baz: 1\n", 2, 6},
		{"{a: 1\n", 2, 1},        // expected ',' or '}', but got '<stream end>'
		{"a: [1\n", 2, 1},        // expected ',' or ']', but got '<stream end>'
		{"a: 1\n\tb: 2\n", 2, 1}, // found character '\t' that cannot start any token
		{"a: 'x\n", 2, 1},        // found unexpected end of stream
	} {
		r, err := f.w.Validate(t.Context(), durable.ValidateParams{Content: tc.doc, FormatHint: strp("yaml")})
		must(t, err)
		errs := r["errors"].([]map[string]any)
		if r["valid"] != false || len(errs) != 1 || errs[0]["line"] != tc.line || errs[0]["col"] != tc.col {
			t.Errorf("%q: %v, want line %d col %d", tc.doc, errs, tc.line, tc.col)
		}
	}
}
