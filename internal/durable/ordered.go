package durable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// member is one key of an orderedObject.
type member struct {
	key string
	val any
}

// orderedObject is a JSON object that remembers its key order, so a handoff
// envelope's front matter keeps the caller's order.
type orderedObject []member

// get returns the value of key.
func (o orderedObject) get(key string) (any, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// decodeOrdered decodes JSON keeping object key order (orderedObject) and
// numbers as json.Number.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeOrderedValue(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

func decodeOrderedValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := orderedObject{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeOrderedValue(dec)
				if err != nil {
					return nil, err
				}
				obj = append(obj, member{k, v})
			}
			_, err := dec.Token()
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeOrderedValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return tok, nil
	}
}

// yamlNode builds a YAML node from an ordered JSON value.
func yamlNode(v any) (*yaml.Node, error) {
	switch t := v.(type) {
	case orderedObject:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, m := range t {
			k, err := yamlNode(m.key)
			if err != nil {
				return nil, err
			}
			val, err := yamlNode(m.val)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, k, val)
		}
		return n, nil
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, e := range t {
			c, err := yamlNode(e)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		return n, nil
	case json.Number:
		if i, err := t.Int64(); err == nil {
			v = i
		} else if f, err := t.Float64(); err == nil {
			v = f
		}
	}
	if s, ok := v.(string); ok && strings.ContainsFunc(s, unicode.IsControl) {
		// yaml.v3 renders some multi-line strings as literal blocks that
		// do not round-trip (a leading newline is lost): quote them.
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}, nil
	}
	n := &yaml.Node{}
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	return n, nil
}

// renderYAML renders an ordered object as block YAML without a trailing
// newline.
func renderYAML(obj orderedObject) (string, error) {
	n, err := yamlNode(obj)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return strings.TrimRightFunc(buf.String(), unicode.IsSpace), nil
}

// normalizeYAML makes a decoded YAML value JSON-encodable: map keys become
// strings.
func normalizeYAML(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeYAML(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = normalizeYAML(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = normalizeYAML(e)
		}
		return t
	}
	return v
}
