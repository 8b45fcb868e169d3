package strictyaml

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustParse(t testing.TB, src string) *Document {
	t.Helper()
	d, err := Parse("t.yaml", []byte(src), Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return d
}

func toJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParseRejects: each problem YAML lets through is an error of its
// class, at its place.
func TestParseRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		src   string
		opt   Options
		class error
		want  string // the first error, rendered
	}{
		{"duplicate key", "a:\n  b: 1\n  c: 2\n  b: 3\n", Options{}, ErrDuplicateKey, `t.yaml:4:3: a.b: key "b" given twice (first at line 2)`},
		{"second document", "a: 1\n---\na: 2\n", Options{}, ErrSyntax, "t.yaml:2: a second YAML document: the file must hold one"},
		{"syntax", "a: [\n", Options{}, ErrSyntax, "t.yaml:1: did not find expected node content"},
		{"tab", "a:\n\t- x\n", Options{}, ErrSyntax, "t.yaml:2: found character that cannot start any token"},
		{"invalid utf-8", "a: 1\nb: \"\xff\"\n", Options{}, ErrSyntax, "t.yaml:2:5: not valid UTF-8 (byte 0xff at offset 9)"},
		{"too large", "a: 12345\n", Options{MaxBytes: 8}, ErrLimit, "t.yaml:1: file is 9 bytes, limit 8"},
		{"too deep", "a: [[[[x]]]]\n", Options{MaxDepth: 3}, ErrLimit, "t.yaml:1:7: a[0][0][0]: nested deeper than 3 levels"},
		{"alias cycle", "a: &a [1, *a]\n", Options{}, ErrSyntax, "t.yaml:1:11: a[1]: alias *a is inside the value it names"},
		{"custom tag", "a: !secret x\n", Options{}, ErrSyntax, "t.yaml:1:4: a: unsupported YAML tag !secret"},
		{"set", "a: !!set {x}\n", Options{}, ErrSyntax, "t.yaml:1:4: a: unsupported YAML tag !!set"},
		{"infinity", "a: [1, .inf]\n", Options{}, ErrSyntax, "t.yaml:1:8: a[1]: .inf is not a finite number"},
		{"nan", "b: .NaN\n", Options{}, ErrSyntax, "t.yaml:1:4: b: .NaN is not a finite number"},
		{"null key", "~: 1\n", Options{}, ErrSyntax, `t.yaml:1:1: a mapping key must be a string, not null (quote it: "~")`},
		{"list key", "? [a]\n: 1\n", Options{}, ErrSyntax, "t.yaml:1:3: a mapping key must be a string, not a list"},
		{"merge a list of scalars", "a: {<<: [1]}\n", Options{}, ErrSyntax, "t.yaml:1:10: a: '<<' must merge a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("t.yaml", []byte(tt.src), tt.opt)
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("err = %v, want Errors", err)
			}
			if !errors.Is(err, tt.class) {
				t.Errorf("err = %v, want class %v", err, tt.class)
			}
			if got := es[0].Error(); got != tt.want {
				t.Errorf("error\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestParseReportsEveryProblem: one pass finds all the tree's problems.
func TestParseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	src := "a: 1\na: 2\nb:\n  - {x: 1, x: 2}\n  - !odd 3\nc: .inf\n"
	_, err := Parse("t.yaml", []byte(src), Options{})
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("err = %v", err)
	}
	want := []string{
		`t.yaml:2:1: a: key "a" given twice (first at line 1)`,
		`t.yaml:4:12: b[0].x: key "x" given twice (first at line 4)`,
		"t.yaml:5:5: b[1]: unsupported YAML tag !odd",
		"t.yaml:6:4: c: .inf is not a finite number",
	}
	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("errors\n got %q\nwant %q", got, want)
	}
}

// TestAliasBomb: aliases that expand exponentially are refused quickly.
func TestAliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	start := time.Now()
	_, err := Parse("bomb.yaml", []byte(b.String()), Options{MaxAliasNodes: 10000})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "aliases expand to more than 10000 values") {
		t.Errorf("err = %v", err)
	}
	if strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("the bomb is reported more than once: %v", err)
	}
	// A generous bound is reached within a bounded amount of work; this is
	// a sanity bound on a runaway, not a performance target.
	if _, err := Parse("bomb.yaml", []byte(b.String()), Options{}); !errors.Is(err, ErrLimit) {
		t.Errorf("default bound: %v", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("refusing the bomb took %v", d)
	}
}

func TestEmpty(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"", "# only a comment\n", "\ufeff", "\n\n"} {
		d := mustParse(t, src)
		if !d.Empty() || d.Value() != nil {
			t.Errorf("%q: Empty %v, value %v", src, d.Empty(), d.Value())
		}
		var out struct{ A int }
		if err := d.Decode(&out); err != nil {
			t.Errorf("%q: decoding an empty document: %v", src, err)
		}
	}
	if d := mustParse(t, "~\n"); d.Empty() {
		t.Error("an explicit null is not an empty document")
	}
}

// TestValue: tags, numbers, merge keys and aliases resolve into the
// generic tree.
func TestValue(t *testing.T) {
	t.Parallel()
	src := "\ufeff" + `base: &base {kind: command, argv: [make], env: {A: "1"}}
lint:
  <<: *base
  argv: [make, lint]
both:
  <<: [{kind: x, n: 1}, {kind: y, m: 2}]
nums: [0x10, 0o17, 1_000, -3, 2.5, 1e3, 12345678901234567890, 18446744073709551616]
strs: ["0x10", '1', 2001-12-14, !!str 7, !!binary aGk=, <<]
bools: [true, false, TRUE]
nulls: [~, null, ""]
keys: {1: a, true: b, 2.5: c}
`
	got := toJSON(t, mustParse(t, src).Value())
	want := `{"base":{"argv":["make"],"env":{"A":"1"},"kind":"command"},` +
		`"bools":[true,false,true],` +
		`"both":{"kind":"x","m":2,"n":1},` +
		`"keys":{"1":"a","2.5":"c","true":"b"},` +
		`"lint":{"argv":["make","lint"],"env":{"A":"1"},"kind":"command"},` +
		`"nulls":[null,null,""],` +
		`"nums":[16,15,1000,-3,2.5,1000,12345678901234567890,1.8446744073709552e+19],` +
		`"strs":["0x10","1","2001-12-14","7","aGk=","\u003c\u003c"]}`
	if got != want {
		t.Errorf("value\n got %s\nwant %s", got, want)
	}
}

func TestPos(t *testing.T) {
	t.Parallel()
	d := mustParse(t, "version: 1\ntasks:\n  - id: a\n    deps: [x, y]\n  - {id: b}\n")
	tests := []struct {
		path Path
		want Pos
		has  bool
	}{
		{nil, Pos{1, 1}, true},
		{Path{"version"}, Pos{1, 1}, true},
		{Path{"tasks"}, Pos{2, 1}, true},
		{Path{"tasks", 0}, Pos{3, 5}, true},
		{Path{"tasks", 0, "deps", 1}, Pos{4, 15}, true},
		{Path{"tasks", 1, "id"}, Pos{5, 6}, true},
		{Path{"tasks", 1, "objective"}, Pos{5, 5}, false}, // nearest ancestor
		{Path{"tasks", 7, "id"}, Pos{2, 1}, false},
		{Path{"version", "x"}, Pos{1, 1}, false},
	}
	for _, tt := range tests {
		if got := d.Pos(tt.path); got != tt.want {
			t.Errorf("Pos(%v) = %v, want %v", tt.path, got, tt.want)
		}
		if got := d.Has(tt.path); got != tt.has {
			t.Errorf("Has(%v) = %v, want %v", tt.path, got, tt.has)
		}
	}
	e := d.Errorf(ErrType, Path{"tasks", 1, "id"}, "bad %s", "id")
	if e.Error() != "t.yaml:5:6: tasks[1].id: bad id" || !errors.Is(e, ErrType) {
		t.Errorf("Errorf = %v", e)
	}
}

func TestPathForms(t *testing.T) {
	t.Parallel()
	p := Path{"agents", "my.profile", "env", 0, "a/b~c"}
	if got := p.String(); got != `agents["my.profile"].env[0]["a/b~c"]` {
		t.Errorf("String = %s", got)
	}
	if got := p.Pointer(); got != "/agents/my.profile/env/0/a~1b~0c" {
		t.Errorf("Pointer = %s", got)
	}
	if got := (Path{0, "x"}).String(); got != "[0].x" {
		t.Errorf("String = %s", got)
	}
}

func TestParseAuto(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"\ufeff \n{\"a\": \"x\\/y\"}": `{"a":"x/y"}`, // JSON: YAML has no \/ escape
		"a: [1]\n":                    `{"a":[1]}`,
		"[1, 2]\n":                    `[1,2]`,
	} {
		d, err := ParseAuto("t", []byte(src), Options{})
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if got := toJSON(t, d.Value()); got != want {
			t.Errorf("%q: %s, want %s", src, got, want)
		}
	}
	if _, err := ParseAuto("t", []byte(`{"a": 1,}`), Options{}); !errors.Is(err, ErrSyntax) {
		t.Errorf("a trailing comma in JSON: %v", err)
	}
}

func TestParseJSON(t *testing.T) {
	t.Parallel()
	src := "\ufeff{\n\t\"version\": 1,\n\t\"a\": [\"x\\/y\", 1e400, {\"b\": null}]\n}"
	d, err := ParseJSON("t.json", []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := toJSON(t, d.Value()); got != `{"a":["x/y",1e400,{"b":null}],"version":1}` {
		t.Errorf("value %s", got)
	}
	if got := d.Pos(Path{"a", 2, "b"}); got != (Pos{3, 24}) {
		t.Errorf("pos %v", got)
	}
	for _, tt := range []struct{ src, want string }{
		{`{"a": 1, "a": 2}`, `t.json:1:10: a: key "a" given twice (first at line 1)`},
		{`{"a": 1} x`, "t.json:1:10: trailing data after the document"},
		{`{"a": 1} {}`, "t.json:1:10: trailing data after the document"},
		{`{"a": 1,}`, "t.json:1:9: invalid character '}' looking for beginning of object key string"},
		{`{"a": [1`, "t.json:1:9: unexpected end of the document"},
		{`[[[[1]]]]`, "t.json:1:4: [0][0][0]: nested deeper than 2 levels"},
	} {
		_, err := ParseJSON("t.json", []byte(tt.src), Options{MaxDepth: 2})
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: err\n got %v\nwant %s", tt.src, err, tt.want)
		}
	}
}
