package envelope

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a compiled JSON Schema (draft 2020-12 unless the document
// says otherwise), validated by github.com/santhosh-tekuri/jsonschema/v6
// (decision: D-6). Compiling refuses keywords the
// draft does not define, so a typo in a schema is an error rather than a
// check silently not made, and "format" is asserted. A Schema is immutable
// and safe for concurrent use.
type Schema struct {
	name string
	s    *jsonschema.Schema
}

// Violation is one way an instance fails its schema. Path locates the value:
// each element is a string (object key) or an int (array index).
type Violation struct {
	Path    []any
	Keyword string // the failing keyword: "required", "type", "pattern", ...
	Message string
	// Missing is, for a "required" violation (located at the object), the
	// field that is missing.
	Missing string
}

// String renders the violation as "path: message".
func (v Violation) String() string {
	p := FormatPath(v.Path)
	if p == "" {
		p = "(root)"
	}
	return p + ": " + v.Message
}

// maxViolations bounds the violations reported for one instance.
const maxViolations = 100

// CompileSchema compiles a JSON Schema document. name is used in errors.
func CompileSchema(name string, doc []byte) (*Schema, error) {
	v, err := ParseJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	if err := checkKeywords(v, "#"); err != nil {
		return nil, fmt.Errorf("schema %s: %w: %w", name, ErrSchemaInvalid, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	url := "apiary:///" + name + ".json"
	if err := c.AddResource(url, v); err != nil {
		return nil, fmt.Errorf("schema %s: %w: %w", name, ErrSchemaInvalid, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w: %w", name, ErrSchemaInvalid, err)
	}
	return &Schema{name: name, s: s}, nil
}

// The keywords of draft 2020-12, by what their value is.
var (
	subschemaKeywords = []string{"additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else",
		"unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	subschemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	subschemaMapKeywords  = []string{"properties", "patternProperties", "$defs", "dependentSchemas"}
	valueKeywords         = []string{"$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment",
		"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
		"maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
		"maxProperties", "minProperties", "required", "dependentRequired", "format", "contentEncoding", "contentMediaType",
		"title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples"}
)

// checkKeywords walks a schema document and rejects a keyword the draft
// does not define and an empty enum (which no value can satisfy).
func checkKeywords(v any, where string) error {
	m, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); isBool {
			return nil
		}
		return fmt.Errorf("%s: a schema is an object or a boolean", where)
	}
	for k, x := range m {
		at := where + "/" + k
		switch {
		case slices.Contains(subschemaKeywords, k):
			if err := checkKeywords(x, at); err != nil {
				return err
			}
		case slices.Contains(subschemaListKeywords, k):
			list, _ := x.([]any)
			for i, e := range list {
				if err := checkKeywords(e, at+"/"+strconv.Itoa(i)); err != nil {
					return err
				}
			}
		case slices.Contains(subschemaMapKeywords, k):
			subs, _ := x.(map[string]any)
			for name, e := range subs {
				if err := checkKeywords(e, at+"/"+name); err != nil {
					return err
				}
			}
		case k == "enum":
			if list, ok := x.([]any); !ok || len(list) == 0 {
				return fmt.Errorf("%s: enum is not a non-empty array", at)
			}
		case !slices.Contains(valueKeywords, k):
			return fmt.Errorf("%s: unknown keyword %q", where, k)
		}
	}
	return nil
}

// Validate checks v — a tree of map[string]any, []any, string,
// json.Number or float64, bool and nil — and returns every violation (at
// most 100), ordered by path, then keyword, then message.
func (s *Schema) Validate(v any) []Violation {
	err := s.s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Keyword: "invalid", Message: err.Error()}}
	}
	f := &flattener{root: v}
	f.flatten(ve, nil, nil, nil)
	f.resolveNames()
	slices.SortFunc(f.out, func(a, b Violation) int {
		return cmp.Or(comparePaths(a.Path, b.Path), cmp.Compare(a.Keyword, b.Keyword), cmp.Compare(a.Message, b.Message))
	})
	f.out = slices.CompactFunc(f.out, func(a, b Violation) bool {
		return a.Keyword == b.Keyword && a.Message == b.Message && comparePaths(a.Path, b.Path) == 0
	})
	if len(f.out) > maxViolations {
		f.out = f.out[:maxViolations]
	}
	return f.out
}

func comparePaths(a, b []any) int {
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		xi, xInt := x.(int)
		yi, yInt := y.(int)
		switch {
		case xInt && yInt:
			if c := cmp.Compare(xi, yi); c != 0 {
				return c
			}
		case xInt:
			return -1
		case yInt:
			return 1
		default:
			if c := cmp.Compare(x.(string), y.(string)); c != 0 {
				return c
			}
		}
	}
	return cmp.Compare(len(a), len(b))
}
