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
		`{"if": {"type": "string"}}`,          // unsupported keyword: never silently ignored
		`{"type": "strnig"}`,                  // unknown type
		`{"$ref": "#/$defs/missing"}`,         // dangling ref
		`{"pattern": "("}`,                    // bad regexp
		`{"minItems": -1}`,                    // bad count
		`{"properties": {"a": {"enum": []}}}`, // empty enum
		`[]`,                                  // not an object
	} {
		if _, err := CompileSchema("bad", []byte(doc)); !errors.Is(err, ErrSchemaInvalid) && !errors.Is(err, ErrSyntax) {
			t.Errorf("CompileSchema(%s) = %v, want ErrSchemaInvalid", doc, err)
		}
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
