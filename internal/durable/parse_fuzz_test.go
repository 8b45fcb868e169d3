package durable

import (
	"context"
	"strings"
	"testing"
)

// FuzzValidate: every format's checker accepts any text without panicking,
// reports lines within the text and always answers ok:true.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{"", "{", "\\begin{a}\\end{b}}{", "```\n~~~", "a: [", "package p\nfunc(", "x = [1,", "http://a%b_c $x_y$", "\r\n\r"} {
		f.Add(s)
	}
	w := &Workspace{cfg: Config{}}
	f.Fuzz(func(t *testing.T, s string) {
		lines := strings.Count(s, "\n") + strings.Count(s, "\r") + 2
		for _, hint := range []string{"latex", "json", "yaml", "toml", "go", "markdown"} {
			r, err := w.Validate(context.Background(), ValidateParams{Content: s, FormatHint: &hint})
			if err != nil || r["ok"] != true {
				t.Fatalf("%s: %v %v", hint, r, err)
			}
			for _, e := range r["errors"].([]map[string]any) {
				if l := e["line"].(int); l < 1 || l > lines {
					t.Fatalf("%s: line %d of a %d-line text", hint, l, lines)
				}
			}
		}
	})
}

// FuzzHandoffFrontMatter: parsing arbitrary handoff text never panics, and
// an envelope rendered by rw.handoff_write parses back to the same fields.
func FuzzHandoffFrontMatter(f *testing.F) {
	f.Add(`{"task_id":"t","status":"complete","agent":"a","summary":"s","next_steps":["x"],"last_good_state":[]}`, "---\nx: 1\n---\nbody")
	f.Add(`{"task_id":"---","status":"partial","agent":"\n---\n","summary":"a: b","next_steps":[],"last_good_state":[{"path":"p","sha256":"0"}],"n":1.5}`, "---")
	f.Fuzz(func(t *testing.T, envJSON, text string) {
		parseHandoff(text)
		v, err := decodeOrdered([]byte(envJSON))
		obj, ok := v.(orderedObject)
		if err != nil || !ok || validateHandoff(obj.get) != nil {
			return
		}
		front, err := renderYAML(obj)
		if err != nil {
			return
		}
		env, _, err := parseHandoff("---\n" + front + "\n---\n")
		if err != nil {
			t.Fatalf("rendered front matter does not parse: %v\n%s", err, front)
		}
		for _, m := range obj {
			if s, ok := m.val.(string); ok && env[m.key] != s {
				t.Fatalf("%s: %q became %v\n%s", m.key, s, env[m.key], front)
			}
		}
	})
}

// FuzzJSONLines: the journal reader never panics; it accepts every line of
// a file it returns rows for, and a torn last line never fails it.
func FuzzJSONLines(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\n"))
	f.Add([]byte("{\"a\":1}\n{\"b\""))
	f.Add([]byte("x\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := parseJSONLines(data, func(string) error { return ErrWriteCorruption })
		if err == nil && rows != nil && len(rows) > strings.Count(string(data), "\n")+1 {
			t.Fatalf("%d rows from %d lines", len(rows), strings.Count(string(data), "\n")+1)
		}
	})
}

// FuzzISO: duration and timestamp parsing never panic, and durations are
// never negative.
func FuzzISO(f *testing.F) {
	for _, s := range []string{"PT1H", "P365D", "P99999999999999999999Y", "P", "2026-01-01T00:00:00Z", "2026-01-01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, ok := parseISODuration(s); ok && d < 0 {
			t.Fatalf("%q: negative %v", s, d)
		}
		parseISOTime(s)
	})
}

// FuzzGlob: glob matching never panics and "**" matches every path.
func FuzzGlob(f *testing.F) {
	f.Add("**/*.go", "a/b/c.go")
	f.Add("[", "x")
	f.Fuzz(func(t *testing.T, glob, p string) {
		globMatch(glob, p)
		if !globMatch("**", p) {
			t.Fatalf("** does not match %q", p)
		}
	})
}
