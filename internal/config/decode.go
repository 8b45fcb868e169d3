package config

import (
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// decoder walks a yaml.Node tree into a Go value, strictly: unknown fields and
// type mismatches become Errors naming the field path and the line. It also
// records the line of every field it decodes, for validation errors.
type decoder struct {
	file  string
	errs  Errors
	lines map[string]int
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: n.Line, Field: path, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) node(n *yaml.Node, path string, out any) {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return
		}
		n = n.Content[0]
	}
	d.value(n, path, reflect.ValueOf(out).Elem())
}

func (d *decoder) value(n *yaml.Node, path string, v reflect.Value) {
	if path != "" {
		d.lines[path] = n.Line
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if v.CanAddr() && v.Addr().Type().Implements(unmarshalerType) {
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.errorf(n, path, "%s", cleanYAML(err))
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.value(n, path, v.Elem())
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.errorf(n, path, "must be a mapping")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			f, ok := fieldByTag(v, key.Value)
			if !ok {
				d.errorf(key, join(path, key.Value), "unknown field (known: %s)", knownFields(v.Type()))
				continue
			}
			d.value(val, join(path, key.Value), f)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.errorf(n, path, "must be a mapping")
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			elem := reflect.New(v.Type().Elem()).Elem()
			d.value(val, join(path, key.Value), elem)
			v.SetMapIndex(reflect.ValueOf(key.Value), elem)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.errorf(n, path, "must be a list")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.value(item, fmt.Sprintf("%s[%d]", path, i), s.Index(i))
		}
		v.Set(s)
	default:
		if n.Kind != yaml.ScalarNode {
			d.errorf(n, path, "must be a single value")
			return
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.errorf(n, path, "%s", cleanYAML(err))
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func fieldByTag(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

func knownFields(t reflect.Type) string {
	var names []string
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if tag != "" && tag != "-" {
			names = append(names, tag)
		}
	}
	return strings.Join(names, ", ")
}

// cleanYAML shortens yaml.v3's type errors ("yaml: unmarshal errors:\n  line
// 3: cannot unmarshal !!str `x` into int") to their reason.
func cleanYAML(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": cannot unmarshal"); i >= 0 {
		msg = msg[i+2:]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	return strings.TrimSpace(msg)
}
