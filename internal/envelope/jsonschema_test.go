package envelope

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func mustParse(t testing.TB, s string) any {
	t.Helper()
	v, err := ParseJSON([]byte(s))
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return v
}

func TestSchemaKeywords(t *testing.T) {
	t.Parallel()
	schema := `{
	  "type": "object",
	  "required": ["n"],
	  "additionalProperties": false,
	  "properties": {
	    "n": {"type": "integer", "minimum": 1, "maximum": 10},
	    "x": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
	    "s": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[a-z]+$"},
	    "a": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2, "uniqueItems": true},
	    "e": {"enum": ["a", null, 3]},
	    "c": {"const": {"k": [1]}},
	    "m": {"type": "object", "propertyNames": {"pattern": "^[A-Z]+$"}, "additionalProperties": {"type": "boolean"}, "minProperties": 1},
	    "o": {"oneOf": [{"type": "string"}, {"$ref": "#/$defs/obj"}]},
	    "y": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
	    "t": {"type": ["string", "null"]},
	    "f": false
	  },
	  "$defs": {"obj": {"type": "object", "required": ["task"], "properties": {"task": {"type": "string"}}}}
	}`
	s, err := CompileSchema("t", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		doc  string
		want []string // "path:keyword", in order
	}{
		{`{"n": 5}`, nil},
		{`{"n": 5.0, "x": 0.5, "s": "ab", "a": ["p"], "e": null, "c": {"k": [1.0]}, "m": {"OK": true}, "o": {"task": "z"}, "y": false, "t": null}`, nil},
		{`{}`, []string{":required"}},
		{`{"n": "5"}`, []string{"n:type"}},
		{`{"n": 2.5}`, []string{"n:type"}},
		{`{"n": 0}`, []string{"n:minimum"}},
		{`{"n": 11}`, []string{"n:maximum"}},
		{`{"n": 1, "x": 0}`, []string{"x:exclusiveMinimum"}},
		{`{"n": 1, "x": 1}`, []string{"x:exclusiveMaximum"}},
		{`{"n": 1, "s": "a"}`, []string{"s:minLength"}},
		{`{"n": 1, "s": "abcd"}`, []string{"s:maxLength"}},
		{`{"n": 1, "s": "A1"}`, []string{"s:pattern"}},
		{`{"n": 1, "a": []}`, []string{"a:minItems"}},
		{`{"n": 1, "a": ["p", "q", "r"]}`, []string{"a:maxItems"}},
		{`{"n": 1, "a": ["p", "p"]}`, []string{"a:uniqueItems"}},
		{`{"n": 1, "a": [1]}`, []string{"a[0]:type"}},
		{`{"n": 1, "e": "b"}`, []string{"e:enum"}},
		{`{"n": 1, "c": {"k": [2]}}`, []string{"c:const"}},
		{`{"n": 1, "m": {}}`, []string{"m:minProperties"}},
		{`{"n": 1, "m": {"lower": 1}}`, []string{"m.lower:pattern", "m.lower:type"}},
		{`{"n": 1, "o": {}}`, []string{"o:required"}},
		{`{"n": 1, "o": 3}`, []string{"o:oneOf"}},
		{`{"n": 1, "y": "s"}`, []string{"y:anyOf"}},
		{`{"n": 1, "t": 1}`, []string{"t:type"}},
		{`{"n": 1, "f": 1}`, []string{"f:false"}},
		{`{"n": 1, "zzz": 1}`, []string{"zzz:additionalProperties"}},
	}
	for _, tt := range tests {
		var got []string
		for _, v := range s.Validate(mustParse(t, tt.doc)) {
			got = append(got, FormatPath(v.Path)+":"+v.Keyword)
			if v.Message == "" {
				t.Errorf("%s: violation without a message", tt.doc)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: violations %v, want %v", tt.doc, got, tt.want)
		}
	}
}

func TestCompileSchemaRejects(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{"requird": ["a"]}`,                         // a typo is not silently ignored
		`{"properties": {"a": {"maxLenght": 3}}}`,    // nor in a subschema
		`{"items": {"anyOf": [{"tpye": "string"}]}}`, // nor deeper
		`{"type": "strnig"}`,                         // unknown type
		`{"$ref": "#/$defs/missing"}`,                // dangling ref
		`{"pattern": "("}`,                           // bad regexp
		`{"minItems": -1}`,                           // bad count
		`{"properties": {"a": {"enum": []}}}`,        // empty enum
		`[]`,                                         // not an object
	} {
		if _, err := CompileSchema("bad", []byte(doc)); !errors.Is(err, ErrSchemaInvalid) && !errors.Is(err, ErrSyntax) {
			t.Errorf("CompileSchema(%s) = %v, want ErrSchemaInvalid", doc, err)
		}
	}
}

// TestSchemaDraftKeywords: keywords of the draft the hand-written
// validator never had are enforced.
func TestSchemaDraftKeywords(t *testing.T) {
	t.Parallel()
	s, err := CompileSchema("t", []byte(`{
	  "type": "object",
	  "if": {"required": ["kind"], "properties": {"kind": {"const": "command"}}},
	  "then": {"required": ["argv"]},
	  "patternProperties": {"^x-": {"type": "string"}},
	  "dependentRequired": {"hedge_after_s": ["hedge_agent"]},
	  "properties": {"when": {"type": "string", "format": "date-time"}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	for doc, want := range map[string]string{
		`{"kind": "command"}`:                ":required",
		`{"x-note": 1}`:                      "x-note:type",
		`{"hedge_after_s": 5}`:               ":dependentRequired",
		`{"when": "yesterday"}`:              "when:format",
		`{"kind": "command", "argv": ["a"]}`: "",
	} {
		var got []string
		for _, v := range s.Validate(mustParse(t, doc)) {
			got = append(got, FormatPath(v.Path)+":"+v.Keyword)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: %v, want %s", doc, got, want)
		}
	}
}

// TestSchemaPropertyNamesLocation: a bad property name is reported at its
// object, wherever later siblings are (v6 alone would misplace it).
func TestSchemaPropertyNamesLocation(t *testing.T) {
	t.Parallel()
	s, err := CompileSchema("t", []byte(`{
	  "type": "object",
	  "additionalProperties": {
	    "type": "object",
	    "properties": {"env": {"type": "object", "propertyNames": {"pattern": "^[A-Z]+$"}}, "n": {"type": "integer"}}
	  }
	}`))
	if err != nil {
		t.Fatal(err)
	}
	doc := mustParse(t, `{"a": {"env": {"bad": 1, "OK": 2}, "n": 1}, "b": {"env": {"bad": 1}}, "c": {"env": {"GOOD": 1}, "n": "x"}, "d": {"env": {"also-bad": 1}}}`)
	var got []string
	for _, v := range s.Validate(doc) {
		got = append(got, FormatPath(v.Path)+":"+v.Keyword)
	}
	want := []string{"a.env.bad:pattern", "b.env.bad:pattern", "c.n:type", "d.env.also-bad:pattern"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("violations %q, want %q", got, want)
	}
}

func TestFormatPath(t *testing.T) {
	t.Parallel()
	got := FormatPath([]any{"tasks", 2, "deps", 0, "kind"})
	if got != "tasks[2].deps[0].kind" {
		t.Errorf("got %q", got)
	}
	if got := FormatPath([]any{"agents", "my.profile", "env"}); got != `agents["my.profile"].env` {
		t.Errorf("got %q", got)
	}
	v := Violation{Path: nil, Message: "want object"}
	if !strings.HasPrefix(v.String(), "(root): ") {
		t.Errorf("root violation renders as %q", v.String())
	}
}
