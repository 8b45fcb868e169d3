package strictyaml

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Decode stores the document in the value out points to, strictly: a key
// its struct has no field for, or a value of the wrong type, is an error,
// and decoding goes on to report every such problem (Errors). What
// decoded is kept, so a caller that wants to check further may.
//
// Field names come from the `yaml` struct tag, else the `json` tag; "-"
// and untagged fields are never decoded, except that an untagged
// embedded struct (or `yaml:",inline"`) has its fields promoted, outer
// fields first. A scalar decodes into a string field as written ("0x10",
// "true"); numbers decode into integer fields only when integral and in
// range; booleans are true and false only. A type implementing
// encoding.TextUnmarshaler decodes from a scalar's text. An interface{}
// field gets the generic tree of Value. A null sets its target to the
// zero value; a key left out leaves it as it was, so decoding into a
// filled value merges into it. An empty document decodes to nothing.
func (d *Document) Decode(out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("strictyaml: Decode needs a non-nil pointer, got %T", out)
	}
	if d.root == nil {
		return nil
	}
	dc := &decoder{c: &collector{file: d.file}, structs: map[reflect.Type]*structInfo{}}
	dc.decode(d.root, v.Elem())
	return dc.c.err()
}

// DecodeAt is Decode of the value at path alone, for a part whose Go type
// is known only after the rest is decoded (a plug-in's options, say:
// decode them into an interface{} field first, then here). Errors name the
// whole path. A path that does not exist decodes nothing.
func (d *Document) DecodeAt(path Path, out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("strictyaml: DecodeAt needs a non-nil pointer, got %T", out)
	}
	n := d.node(path)
	if n == nil {
		return nil
	}
	dc := &decoder{c: &collector{file: d.file}, structs: map[reflect.Type]*structInfo{}, path: slices.Clone(path)}
	dc.decode(n, v.Elem())
	return dc.c.err()
}

type decoder struct {
	c       *collector
	path    Path // where decode is: a stack, copied into errors
	structs map[reflect.Type]*structInfo
}

func (d *decoder) push(k any) { d.path = append(d.path, k) }
func (d *decoder) pop()       { d.path = d.path[:len(d.path)-1] }

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

func (d *decoder) decode(n *node, v reflect.Value) {
	if d.c.full() {
		return
	}
	if n.kind == nullKind {
		v.SetZero()
		return
	}
	if v.Kind() != reflect.Pointer && v.CanAddr() && v.Addr().Type().Implements(textUnmarshaler) {
		if !n.scalar() {
			d.c.add(n.at, d.path, ErrType, "must be a single value, not a %s", kindWord(n))
			return
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.text)); err != nil {
			d.c.add(n.at, d.path, ErrType, "%v", err)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem())
	case reflect.Interface:
		if v.NumMethod() != 0 {
			d.c.add(n.at, d.path, ErrType, "cannot decode into %s", v.Type())
			return
		}
		v.Set(reflect.ValueOf(n.value()))
	case reflect.Struct:
		d.structure(n, v)
	case reflect.Map:
		if n.kind != mappingKind {
			d.c.add(n.at, d.path, ErrType, "must be a mapping, not a %s", kindWord(n))
			return
		}
		t := v.Type()
		if t.Key().Kind() != reflect.String {
			d.c.add(n.at, d.path, ErrType, "cannot decode into %s: keys must be strings", t)
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(t, len(n.fields)))
		}
		for _, f := range n.fields {
			elem := reflect.New(t.Elem()).Elem()
			d.push(f.key)
			d.decode(f.val, elem)
			d.pop()
			v.SetMapIndex(reflect.ValueOf(f.key).Convert(t.Key()), elem)
		}
	case reflect.Slice:
		if n.kind != listKind {
			d.c.add(n.at, d.path, ErrType, "must be a list, not a %s", kindWord(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.items), len(n.items))
		for i, it := range n.items {
			d.push(i)
			d.decode(it, s.Index(i))
			d.pop()
		}
		v.Set(s)
	case reflect.String:
		if !n.scalar() {
			d.c.add(n.at, d.path, ErrType, "must be a string, not a %s", kindWord(n))
			return
		}
		v.SetString(n.text)
	case reflect.Bool:
		if n.kind != boolKind {
			d.c.add(n.at, d.path, ErrType, "must be true or false")
			return
		}
		v.SetBool(n.b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, ok := integer(n)
		if !ok || v.OverflowInt(i) {
			d.mismatch(n, v)
			return
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u, ok := unsigned(n)
		if !ok || v.OverflowUint(u) {
			d.mismatch(n, v)
			return
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		if n.kind != numberKind {
			d.mismatch(n, v)
			return
		}
		f, err := strconv.ParseFloat(n.num, 64)
		if err != nil || v.OverflowFloat(f) {
			d.mismatch(n, v)
			return
		}
		v.SetFloat(f)
	default:
		d.c.add(n.at, d.path, ErrType, "cannot decode into %s", v.Type())
	}
}

// mismatch reports a value that does not fit a number field, in the words
// yaml.v3 used: "cannot unmarshal !!str `lots` into int".
func (d *decoder) mismatch(n *node, v reflect.Value) {
	if !n.scalar() {
		d.c.add(n.at, d.path, ErrType, "cannot unmarshal %s into %s", n.tag, v.Type())
		return
	}
	text := n.text
	if r := []rune(text); len(r) > 40 {
		text = string(r[:37]) + "..."
	}
	d.c.add(n.at, d.path, ErrType, "cannot unmarshal %s `%s` into %s", n.tag, text, v.Type())
}

func integer(n *node) (int64, bool) {
	if n.kind != numberKind {
		return 0, false
	}
	if i, err := strconv.ParseInt(n.num, 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(n.num, 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

func unsigned(n *node) (uint64, bool) {
	if n.kind != numberKind {
		return 0, false
	}
	if u, err := strconv.ParseUint(n.num, 10, 64); err == nil {
		return u, true
	}
	f, err := strconv.ParseFloat(n.num, 64)
	if err != nil || f != math.Trunc(f) || f < 0 || f >= math.MaxUint64 {
		return 0, false
	}
	return uint64(f), true
}

func kindWord(n *node) string {
	switch n.kind {
	case mappingKind:
		return "mapping"
	case listKind:
		return "list"
	case boolKind:
		return "boolean"
	case numberKind:
		return "number"
	case stringKind:
		return "string"
	}
	return "null"
}

func (d *decoder) structure(n *node, v reflect.Value) {
	if n.kind != mappingKind {
		d.c.add(n.at, d.path, ErrType, "must be a mapping, not a %s", kindWord(n))
		return
	}
	info := d.info(v.Type())
	for _, f := range n.fields {
		fi, ok := info.byName[f.key]
		if !ok {
			d.c.add(f.at, append(d.path, f.key), ErrUnknownField, "unknown field (want one of %s)", strings.Join(info.names, ", "))
			continue
		}
		d.push(f.key)
		d.decode(f.val, v.FieldByIndex(fi.index))
		d.pop()
	}
}

// structInfo is how a struct type's fields are named in YAML.
type structInfo struct {
	names  []string // in declaration order, promoted fields after
	byName map[string]fieldInfo
}

type fieldInfo struct{ index []int }

func (d *decoder) info(t reflect.Type) *structInfo {
	if si, ok := d.structs[t]; ok {
		return si
	}
	si := &structInfo{byName: map[string]fieldInfo{}}
	d.structs[t] = si
	collectFields(t, nil, si, map[reflect.Type]bool{})
	return si
}

// collectFields adds t's named fields, then those of its inlined structs
// (not already named), so outer fields shadow promoted ones.
func collectFields(t reflect.Type, prefix []int, si *structInfo, visiting map[reflect.Type]bool) {
	if visiting[t] {
		return
	}
	visiting[t] = true
	var inline [][]int
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, tagged := fieldName(sf)
		idx := append(append([]int{}, prefix...), i)
		if (sf.Anonymous && !tagged || strings.Contains(","+opts+",", ",inline,")) && sf.Type.Kind() == reflect.Struct {
			inline = append(inline, idx)
			continue
		}
		if !sf.IsExported() || name == "" || name == "-" {
			continue
		}
		if _, dup := si.byName[name]; dup {
			continue
		}
		si.byName[name] = fieldInfo{index: idx}
		si.names = append(si.names, name)
	}
	for _, idx := range inline {
		collectFields(t.Field(idx[len(idx)-1]).Type, idx, si, visiting)
	}
	delete(visiting, t)
}

// fieldName reads the yaml tag, else the json tag: the name, the options
// after the comma, and whether either tag gave a name.
func fieldName(sf reflect.StructField) (name, opts string, named bool) {
	tag, ok := sf.Tag.Lookup("yaml")
	if !ok {
		tag, ok = sf.Tag.Lookup("json")
	}
	if !ok {
		return "", "", false
	}
	name, opts, _ = strings.Cut(tag, ",")
	return name, opts, name != ""
}
