package envelope

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Schema is a compiled JSON Schema (draft 2020-12 keywords, the subset that
// apiary's schemas use). Compiling rejects any keyword the validator does not
// enforce, so a published schema never promises a check that is not made.
// A Schema is immutable and safe for concurrent use.
type Schema struct {
	name string
	root *node
	defs map[string]*node
}

// node is one compiled (sub)schema.
type node struct {
	ref        string // "#/$defs/x"; resolved at validation time
	always     *bool  // the boolean schemas true and false
	types      []string
	properties map[string]*node
	required   []string
	addlProps  *node // nil: any additional property allowed
	propNames  *node
	items      *node
	minItems   int
	maxItems   int // -1: unbounded
	unique     bool
	enum       []any
	hasConst   bool
	constVal   any
	pattern    *regexp.Regexp
	minLength  int
	maxLength  int // -1: unbounded
	minimum    *float64
	maximum    *float64
	exclMin    *float64
	exclMax    *float64
	minProps   int
	anyOf      []*node
	oneOf      []*node
}

// isAnnotation reports whether k is a keyword that carries no assertion.
func isAnnotation(k string) bool {
	switch k {
	case "$schema", "$id", "$comment", "title", "description", "default", "examples", "format", "deprecated", "readOnly", "writeOnly":
		return true
	}
	return false
}

// Violation is one way an instance fails its schema. Path locates the value:
// each element is a string (object key) or an int (array index).
type Violation struct {
	Path    []any
	Keyword string // the failing keyword: "required", "type", "pattern", ...
	Message string
}

// String renders the violation as "path: message".
func (v Violation) String() string {
	p := FormatPath(v.Path)
	if p == "" {
		p = "(root)"
	}
	return p + ": " + v.Message
}

// CompileSchema compiles a JSON Schema document. name is used in errors.
func CompileSchema(name string, doc []byte) (*Schema, error) {
	v, err := ParseJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema %s: %w: top level is not an object", name, ErrSchemaInvalid)
	}
	s := &Schema{name: name, defs: map[string]*node{}}
	if d, ok := m["$defs"]; ok {
		dm, ok := d.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("schema %s: %w: $defs is not an object", name, ErrSchemaInvalid)
		}
		for k, dv := range dm {
			n, err := compileNode(dv, "#/$defs/"+k)
			if err != nil {
				return nil, fmt.Errorf("schema %s: %w", name, err)
			}
			s.defs["#/$defs/"+k] = n
		}
	}
	delete(m, "$defs")
	root, err := compileNode(m, "#")
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	s.root = root
	// Every $ref must resolve.
	var check func(n *node) error
	seen := map[*node]bool{}
	check = func(n *node) error {
		if n == nil || seen[n] {
			return nil
		}
		seen[n] = true
		if n.ref != "" && s.defs[n.ref] == nil && n.ref != "#" {
			return fmt.Errorf("schema %s: %w: unresolved $ref %q", name, ErrSchemaInvalid, n.ref)
		}
		kids := []*node{n.addlProps, n.propNames, n.items}
		for _, p := range n.properties {
			kids = append(kids, p)
		}
		kids = append(kids, n.anyOf...)
		kids = append(kids, n.oneOf...)
		for _, k := range kids {
			if err := check(k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := check(root); err != nil {
		return nil, err
	}
	for _, d := range s.defs {
		if err := check(d); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func compileNode(v any, where string) (*node, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrSchemaInvalid, where, fmt.Sprintf(format, args...))
	}
	if b, ok := v.(bool); ok {
		return &node{always: &b}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, bad("subschema is not an object or boolean")
	}
	n := &node{maxItems: -1, maxLength: -1}
	num := func(k string) (*float64, error) {
		x, ok := m[k]
		if !ok {
			return nil, nil
		}
		f, ok := toFloat(x)
		if !ok {
			return nil, bad("%s is not a number", k)
		}
		return &f, nil
	}
	count := func(k string, def int) (int, error) {
		x, ok := m[k]
		if !ok {
			return def, nil
		}
		f, ok := toFloat(x)
		if !ok || f < 0 || f != math.Trunc(f) {
			return 0, bad("%s is not a non-negative integer", k)
		}
		return int(f), nil
	}
	sub := func(k string) (*node, error) {
		x, ok := m[k]
		if !ok {
			return nil, nil
		}
		return compileNode(x, where+"/"+k)
	}
	subs := func(k string) ([]*node, error) {
		x, ok := m[k]
		if !ok {
			return nil, nil
		}
		arr, ok := x.([]any)
		if !ok || len(arr) == 0 {
			return nil, bad("%s is not a non-empty array", k)
		}
		out := make([]*node, len(arr))
		for i, e := range arr {
			c, err := compileNode(e, fmt.Sprintf("%s/%s/%d", where, k, i))
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	var err error
	for k, x := range m {
		switch k {
		case "$ref":
			s, ok := x.(string)
			if !ok {
				return nil, bad("$ref is not a string")
			}
			n.ref = s
		case "type":
			switch t := x.(type) {
			case string:
				n.types = []string{t}
			case []any:
				for _, e := range t {
					s, ok := e.(string)
					if !ok {
						return nil, bad("type entry is not a string")
					}
					n.types = append(n.types, s)
				}
			default:
				return nil, bad("type is not a string or array")
			}
			for _, t := range n.types {
				if !slices.Contains([]string{"object", "array", "string", "number", "integer", "boolean", "null"}, t) {
					return nil, bad("unknown type %q", t)
				}
			}
		case "properties":
			pm, ok := x.(map[string]any)
			if !ok {
				return nil, bad("properties is not an object")
			}
			n.properties = map[string]*node{}
			for pk, pv := range pm {
				if n.properties[pk], err = compileNode(pv, where+"/properties/"+pk); err != nil {
					return nil, err
				}
			}
		case "required":
			arr, ok := x.([]any)
			if !ok {
				return nil, bad("required is not an array")
			}
			for _, e := range arr {
				s, ok := e.(string)
				if !ok {
					return nil, bad("required entry is not a string")
				}
				n.required = append(n.required, s)
			}
		case "enum":
			arr, ok := x.([]any)
			if !ok || len(arr) == 0 {
				return nil, bad("enum is not a non-empty array")
			}
			n.enum = arr
		case "const":
			n.hasConst, n.constVal = true, x
		case "pattern":
			s, ok := x.(string)
			if !ok {
				return nil, bad("pattern is not a string")
			}
			if n.pattern, err = regexp.Compile(s); err != nil {
				return nil, bad("pattern: %v", err)
			}
		case "uniqueItems":
			b, ok := x.(bool)
			if !ok {
				return nil, bad("uniqueItems is not a boolean")
			}
			n.unique = b
		case "additionalProperties", "propertyNames", "items", "anyOf", "oneOf",
			"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
			"minItems", "maxItems", "minLength", "maxLength", "minProperties":
			// handled below, where each has a typed reader
		default:
			if !isAnnotation(k) {
				return nil, bad("unsupported keyword %q", k)
			}
		}
	}
	if n.addlProps, err = sub("additionalProperties"); err != nil {
		return nil, err
	}
	if n.propNames, err = sub("propertyNames"); err != nil {
		return nil, err
	}
	if n.items, err = sub("items"); err != nil {
		return nil, err
	}
	if n.anyOf, err = subs("anyOf"); err != nil {
		return nil, err
	}
	if n.oneOf, err = subs("oneOf"); err != nil {
		return nil, err
	}
	for _, p := range []struct {
		k   string
		dst **float64
	}{{"minimum", &n.minimum}, {"maximum", &n.maximum}, {"exclusiveMinimum", &n.exclMin}, {"exclusiveMaximum", &n.exclMax}} {
		if *p.dst, err = num(p.k); err != nil {
			return nil, err
		}
	}
	for _, p := range []struct {
		k   string
		def int
		dst *int
	}{{"minItems", 0, &n.minItems}, {"maxItems", -1, &n.maxItems}, {"minLength", 0, &n.minLength}, {"maxLength", -1, &n.maxLength}, {"minProperties", 0, &n.minProps}} {
		if *p.dst, err = count(p.k, p.def); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// maxViolations bounds the violations reported for one instance.
const maxViolations = 100

// Validate checks v — a tree of map[string]any, []any, string, json.Number or
// float64, bool and nil, as ParseJSON returns — against the schema and
// returns every violation found (at most 100), in a deterministic order.
func (s *Schema) Validate(v any) []Violation {
	var out []Violation
	s.check(s.root, v, nil, &out)
	return out
}

func (s *Schema) resolve(n *node) *node {
	for n.ref != "" {
		if n.ref == "#" {
			return s.root
		}
		n = s.defs[n.ref]
	}
	return n
}

func (s *Schema) check(n *node, v any, path []any, out *[]Violation) {
	if len(*out) >= maxViolations {
		return
	}
	n = s.resolve(n)
	add := func(kw, format string, args ...any) {
		if len(*out) < maxViolations {
			*out = append(*out, Violation{Path: slices.Clone(path), Keyword: kw, Message: fmt.Sprintf(format, args...)})
		}
	}
	if n.always != nil {
		if !*n.always {
			add("false", "not allowed")
		}
		return
	}
	if len(n.types) > 0 && !slices.ContainsFunc(n.types, func(t string) bool { return hasType(v, t) }) {
		add("type", "want %s, got %s", strings.Join(n.types, " or "), typeName(v))
		return
	}
	if n.hasConst && !equalJSON(v, n.constVal) {
		add("const", "must be %s", renderJSON(n.constVal))
		return
	}
	if n.enum != nil && !slices.ContainsFunc(n.enum, func(e any) bool { return equalJSON(v, e) }) {
		var opts []string
		for _, e := range n.enum {
			opts = append(opts, renderJSON(e))
		}
		add("enum", "must be one of %s, got %s", strings.Join(opts, ", "), renderJSON(v))
		return
	}
	switch x := v.(type) {
	case map[string]any:
		s.checkObject(n, x, path, out, add)
	case []any:
		if len(x) < n.minItems {
			add("minItems", "must have at least %d item(s), has %d", n.minItems, len(x))
		}
		if n.maxItems >= 0 && len(x) > n.maxItems {
			add("maxItems", "must have at most %d item(s), has %d", n.maxItems, len(x))
		}
		if n.unique {
			for i := range x {
				for j := range i {
					if equalJSON(x[i], x[j]) {
						add("uniqueItems", "item %d repeats item %d (%s)", i, j, renderJSON(x[i]))
					}
				}
			}
		}
		if n.items != nil {
			for i, e := range x {
				s.check(n.items, e, append(path, i), out)
			}
		}
	case string:
		l := utf8.RuneCountInString(x)
		if l < n.minLength {
			if n.minLength == 1 {
				add("minLength", "must not be empty")
			} else {
				add("minLength", "must be at least %d characters long", n.minLength)
			}
		}
		if n.maxLength >= 0 && l > n.maxLength {
			add("maxLength", "must be at most %d characters long, is %d", n.maxLength, l)
		}
		if n.pattern != nil && !n.pattern.MatchString(x) {
			add("pattern", "%s does not match %s", strconv.Quote(x), n.pattern)
		}
	case json.Number, float64:
		f, _ := toFloat(x)
		if n.minimum != nil && f < *n.minimum {
			add("minimum", "must be ≥ %v, got %v", *n.minimum, x)
		}
		if n.maximum != nil && f > *n.maximum {
			add("maximum", "must be ≤ %v, got %v", *n.maximum, x)
		}
		if n.exclMin != nil && f <= *n.exclMin {
			add("exclusiveMinimum", "must be > %v, got %v", *n.exclMin, x)
		}
		if n.exclMax != nil && f >= *n.exclMax {
			add("exclusiveMaximum", "must be < %v, got %v", *n.exclMax, x)
		}
	}
	if n.anyOf != nil {
		s.checkAlternatives(n.anyOf, false, v, path, out, add)
	}
	if n.oneOf != nil {
		s.checkAlternatives(n.oneOf, true, v, path, out, add)
	}
}

func (s *Schema) checkObject(n *node, x map[string]any, path []any, out *[]Violation, add func(kw, format string, args ...any)) {
	for _, r := range n.required {
		if _, ok := x[r]; !ok {
			add("required", "missing required field %q", r)
		}
	}
	if len(x) < n.minProps {
		add("minProperties", "must have at least %d field(s)", n.minProps)
	}
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if n.propNames != nil {
			s.check(n.propNames, k, append(path, k), out)
		}
		if p, ok := n.properties[k]; ok {
			s.check(p, x[k], append(path, k), out)
			continue
		}
		if n.addlProps != nil {
			ap := s.resolve(n.addlProps)
			if ap.always != nil && !*ap.always {
				if len(*out) < maxViolations {
					*out = append(*out, Violation{Path: append(slices.Clone(path), k), Keyword: "additionalProperties", Message: fmt.Sprintf("unknown field %q", k)})
				}
				continue
			}
			s.check(ap, x[k], append(path, k), out)
		}
	}
}

// checkAlternatives implements anyOf (exactly=false) and oneOf. When no
// alternative matches and exactly one of them accepts the value's type, that
// alternative's violations are reported: they are more useful than "matches
// no alternative".
func (s *Schema) checkAlternatives(alts []*node, exactly bool, v any, path []any, out *[]Violation, add func(kw, format string, args ...any)) {
	matched := 0
	var typed [][]Violation
	for _, a := range alts {
		var vs []Violation
		s.check(a, v, path, &vs)
		if len(vs) == 0 {
			matched++
			continue
		}
		if r := s.resolve(a); len(r.types) == 0 || slices.ContainsFunc(r.types, func(t string) bool { return hasType(v, t) }) {
			typed = append(typed, vs)
		}
	}
	kw := "anyOf"
	if exactly {
		kw = "oneOf"
	}
	switch {
	case matched == 0 && len(typed) == 1:
		for _, vs := range typed[0] {
			if len(*out) < maxViolations {
				*out = append(*out, vs)
			}
		}
	case matched == 0:
		add(kw, "%s matches none of the allowed forms", typeName(v))
	case exactly && matched > 1:
		add(kw, "matches %d of the allowed forms, want exactly one", matched)
	}
}
