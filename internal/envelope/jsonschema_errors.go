package envelope

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// flattener turns v6's tree of errors into our flat list.
type flattener struct {
	root  any
	out   []Violation
	names []nameError
}

// nameError is a propertyNames failure. v6 (up to 6.0.3) keeps such an
// error's InstanceLocation without copying it, so later validation of a
// sibling can overwrite it (santhosh-tekuri/jsonschema#258, #269). Its
// place is found again under anchor, the location of the nearest
// enclosing error, whose location v6 does copy.
type nameError struct {
	anchor   []string
	reported []string
	prop     string
	e        *jsonschema.ValidationError
}

// locate converts a JSON pointer's tokens into a path, reading the
// instance to tell array indices from keys, and returns the value there.
func (f *flattener) locate(tokens []string) ([]any, any) {
	path := make([]any, 0, len(tokens))
	v := f.root
	for _, t := range tokens {
		switch x := v.(type) {
		case []any:
			i, _ := strconv.Atoi(t)
			path = append(path, i)
			if i >= 0 && i < len(x) {
				v = x[i]
			}
		case map[string]any:
			path = append(path, t)
			v = x[t]
		default:
			path = append(path, t)
		}
	}
	return path, v
}

// flatten adds e's violations. anchor is the location of the nearest
// enclosing error. For an error inside propertyNames, name is the
// property whose name failed and base the object's path: the name is then
// the value, located at base + name.
func (f *flattener) flatten(e *jsonschema.ValidationError, anchor []string, base []any, name *string) {
	if len(f.out) >= 4*maxViolations {
		return
	}
	var path []any
	var val any
	if name != nil {
		path, val = append(slices.Clone(base), *name), *name
	} else {
		path, val = f.locate(e.InstanceLocation)
	}
	add := func(kw, format string, args ...any) {
		f.out = append(f.out, Violation{Path: path, Keyword: kw, Message: fmt.Sprintf(format, args...)})
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			f.flatten(c, e.InstanceLocation, base, name)
		}
	case *kind.AnyOf:
		f.alternatives(e, "anyOf", val, base, name, add)
	case *kind.OneOf:
		if len(k.Subschemas) == 2 {
			add("oneOf", "matches more than one of the allowed forms (%d and %d), want exactly one", k.Subschemas[0], k.Subschemas[1])
			return
		}
		f.alternatives(e, "oneOf", val, base, name, add)
	case *kind.PropertyNames:
		if name == nil {
			f.names = append(f.names, nameError{anchor: anchor, reported: slices.Clone(e.InstanceLocation), prop: k.Property, e: e})
		}
	case *kind.FalseSchema:
		add("false", "not allowed")
	case *kind.Type:
		add("type", "want %s, got %s", strings.Join(k.Want, " or "), typeName(val))
	case *kind.Const:
		add("const", "must be %s", renderJSON(k.Want))
	case *kind.Enum:
		opts := make([]string, len(k.Want))
		for i, w := range k.Want {
			opts[i] = renderJSON(w)
		}
		add("enum", "must be one of %s, got %s", strings.Join(opts, ", "), renderJSON(val))
	case *kind.Required:
		for _, m := range k.Missing {
			f.out = append(f.out, Violation{Path: path, Keyword: "required", Message: fmt.Sprintf("missing required field %q", m), Missing: m})
		}
	case *kind.AdditionalProperties:
		props := slices.Sorted(slices.Values(k.Properties))
		for _, p := range props {
			f.out = append(f.out, Violation{Path: append(slices.Clone(path), p), Keyword: "additionalProperties", Message: fmt.Sprintf("unknown field %q", p)})
		}
	case *kind.MinProperties:
		add("minProperties", "must have at least %d field(s)", k.Want)
	case *kind.MinItems:
		add("minItems", "must have at least %d item(s), has %d", k.Want, k.Got)
	case *kind.MaxItems:
		add("maxItems", "must have at most %d item(s), has %d", k.Want, k.Got)
	case *kind.UniqueItems:
		// v6 names the first repeat; every repeat is reported.
		arr, _ := val.([]any)
		for i := range arr {
			for j := range i {
				if equalJSON(arr[i], arr[j]) {
					add("uniqueItems", "item %d repeats item %d (%s)", i, j, renderJSON(arr[i]))
					break
				}
			}
		}
	case *kind.MinLength:
		if k.Want == 1 {
			add("minLength", "must not be empty")
		} else {
			add("minLength", "must be at least %d characters long", k.Want)
		}
	case *kind.MaxLength:
		add("maxLength", "must be at most %d characters long, is %d", k.Want, k.Got)
	case *kind.Pattern:
		add("pattern", "%s does not match %s", strconv.Quote(k.Got), k.Want)
	case *kind.Minimum:
		add("minimum", "must be ≥ %s, got %s", ratString(k.Want), numString(val))
	case *kind.Maximum:
		add("maximum", "must be ≤ %s, got %s", ratString(k.Want), numString(val))
	case *kind.ExclusiveMinimum:
		add("exclusiveMinimum", "must be > %s, got %s", ratString(k.Want), numString(val))
	case *kind.ExclusiveMaximum:
		add("exclusiveMaximum", "must be < %s, got %s", ratString(k.Want), numString(val))
	default:
		kw := "invalid"
		if p := e.ErrorKind.KeywordPath(); len(p) > 0 {
			kw = p[0]
		}
		add(kw, "%s", e.ErrorKind.LocalizedString(message.NewPrinter(language.English)))
	}
}

// resolveNames places the propertyNames failures: among the objects under
// the failure's anchor that hold the property, the reported location when
// it is one of them, else the first not yet taken. Failures that cannot be
// told apart (the same name, the same anchor) thus land on distinct
// objects.
func (f *flattener) resolveNames() {
	taken := map[string]bool{}
	for _, n := range f.names {
		anchorPath, anchorVal := f.locate(n.anchor)
		var cands [][]any
		collectHolders(anchorVal, anchorPath, n.prop, &cands)
		reported, _ := f.locate(n.reported)
		var at []any
		for _, c := range cands {
			if comparePaths(c, reported) == 0 && !taken[n.prop+"\x00"+fmt.Sprint(c)] {
				at = c
			}
		}
		if at == nil {
			for _, c := range cands {
				if !taken[n.prop+"\x00"+fmt.Sprint(c)] {
					at = c
					break
				}
			}
		}
		if at == nil {
			at = reported
		}
		taken[n.prop+"\x00"+fmt.Sprint(at)] = true
		p := n.prop
		for _, c := range n.e.Causes {
			f.flatten(c, nil, at, &p)
		}
	}
}

// collectHolders appends the paths of the objects within v (at path) that
// have a member named prop, in path order.
func collectHolders(v any, path []any, prop string, out *[][]any) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[prop]; ok {
			*out = append(*out, slices.Clone(path))
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			collectHolders(x[k], append(path[:len(path):len(path)], k), prop, out)
		}
	case []any:
		for i, e := range x {
			collectHolders(e, append(path[:len(path):len(path)], i), prop, out)
		}
	}
}

// alternatives reports an anyOf or oneOf that no alternative matched.
// When all but one alternative reject the value's type, that one's
// violations are more useful than "matches none of the allowed forms".
func (f *flattener) alternatives(e *jsonschema.ValidationError, kw string, val any, base []any, name *string, add func(kw, format string, args ...any)) {
	var typed []*jsonschema.ValidationError
	for _, c := range e.Causes {
		if !rejectsType(c, e.InstanceLocation) {
			typed = append(typed, c)
		}
	}
	if len(typed) == 1 {
		f.flatten(typed[0], e.InstanceLocation, base, name)
		return
	}
	add(kw, "%s matches none of the allowed forms", typeName(val))
}

// rejectsType reports whether an alternative's failure is only that the
// value at loc has the wrong type.
func rejectsType(e *jsonschema.ValidationError, loc []string) bool {
	switch e.ErrorKind.(type) {
	case *kind.Type:
		return slices.Equal(e.InstanceLocation, loc)
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		return len(e.Causes) == 1 && rejectsType(e.Causes[0], loc)
	}
	return false
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func numString(v any) string {
	switch x := v.(type) {
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}
