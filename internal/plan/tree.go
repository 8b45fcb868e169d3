package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/apiary-dev/apiary/internal/envelope"
	"gopkg.in/yaml.v3"
)

// pos is a 1-based line and column in the plan file.
type pos struct{ line, col int }

// posTree mirrors a decoded document with the position of every value: an
// object member is located at its key, an array item at the item.
type posTree struct {
	at    pos
	keys  map[string]*posTree
	items []*posTree
}

// child returns (creating it) the node for key k (string) or index k (int).
func (t *posTree) child(k any, at pos) *posTree {
	c := &posTree{at: at}
	switch k := k.(type) {
	case string:
		if t.keys == nil {
			t.keys = map[string]*posTree{}
		}
		t.keys[k] = c
	case int:
		for len(t.items) <= k {
			t.items = append(t.items, nil)
		}
		t.items[k] = c
	}
	return c
}

// lookup returns the position of path, or of its nearest ancestor that has
// one.
func (t *posTree) lookup(path []any) pos {
	best := pos{1, 1}
	for t != nil {
		if t.at.line > 0 {
			best = t.at
		}
		if len(path) == 0 {
			break
		}
		var next *posTree
		switch k := path[0].(type) {
		case string:
			next = t.keys[k]
		case int:
			if k >= 0 && k < len(t.items) {
				next = t.items[k]
			}
		}
		t, path = next, path[1:]
	}
	return best
}

// maxAliasNodes bounds the values that aliases may expand to (alias bombs);
// the document's own values are bounded by its size.
const maxAliasNodes = 1 << 20

// decodeTree turns a plan document — JSON if its first non-blank byte is '{',
// YAML otherwise — into a ParseJSON-style tree and the positions of its
// fields. Errors are *FieldError values wrapping ErrSyntax.
func decodeTree(file string, data []byte) (any, *posTree, error) {
	if len(data) > envelope.MaxDocumentSize {
		return nil, nil, &FieldError{File: file, Line: 1, Err: ErrSyntax, Msg: fmt.Sprintf("plan is %d bytes, limit %d", len(data), envelope.MaxDocumentSize)}
	}
	if !utf8.Valid(data) {
		return nil, nil, &FieldError{File: file, Line: 1, Err: ErrSyntax, Msg: "plan is not valid UTF-8"}
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // a byte-order mark
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return decodeJSONTree(file, data)
	}
	return decodeYAMLTree(file, data)
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

func decodeYAMLTree(file string, data []byte) (any, *posTree, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		line := 1
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		msg := err.Error()
		if errors.Is(err, io.EOF) {
			msg = "plan is empty"
		}
		return nil, nil, &FieldError{File: file, Line: line, Err: ErrSyntax, Msg: msg}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, nil, &FieldError{File: file, Line: extra.Line, Err: ErrSyntax, Msg: "a plan file holds one YAML document"}
	}
	c := &yamlConv{file: file}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	pt := &posTree{at: pos{root.Line, root.Column}}
	v, err := c.convert(root, nil, pt, 0)
	if err != nil {
		return nil, nil, err
	}
	return v, pt, nil
}

type yamlConv struct {
	file       string
	aliasDepth int // > 0 while converting the target of an alias
	aliasNodes int // values converted through aliases
}

func (c *yamlConv) fail(n *yaml.Node, path []any, format string, args ...any) error {
	return &FieldError{File: c.file, Line: n.Line, Column: n.Column, Path: envelope.FormatPath(path), Err: ErrSyntax, Msg: fmt.Sprintf(format, args...)}
}

func (c *yamlConv) convert(n *yaml.Node, path []any, pt *posTree, depth int) (any, error) {
	if c.aliasDepth > 0 {
		if c.aliasNodes++; c.aliasNodes > maxAliasNodes {
			return nil, c.fail(n, path, "aliases expand to more than %d values", maxAliasNodes)
		}
	}
	if depth > envelope.MaxDepth {
		return nil, c.fail(n, path, "nesting deeper than %d", envelope.MaxDepth)
	}
	switch n.Kind {
	case yaml.AliasNode:
		c.aliasDepth++
		defer func() { c.aliasDepth-- }()
		return c.convert(n.Alias, path, pt, depth+1)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, e := range n.Content {
			v, err := c.convert(e, append(path, i), pt.child(i, pos{e.Line, e.Column}), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := map[string]any{}
		if err := c.mergeMapping(n, path, pt, depth, out, true); err != nil {
			return nil, err
		}
		return out, nil
	case yaml.ScalarNode:
		return c.scalar(n, path)
	}
	return nil, c.fail(n, path, "unsupported YAML node")
}

// mergeMapping adds n's entries to out. Explicit keys win over merged ones
// ("<<: *defaults"); a key given twice explicitly is an error.
func (c *yamlConv) mergeMapping(n *yaml.Node, path []any, pt *posTree, depth int, out map[string]any, explicit bool) error {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || (k.Tag != "!!str" && k.Tag != "!!merge" && k.Tag != "!!int" && k.Tag != "!!bool" && k.Tag != "!!float") {
			return c.fail(k, path, "mapping keys must be strings")
		}
		if k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		p := append(path, k.Value)
		if _, dup := out[k.Value]; dup {
			if explicit {
				return c.fail(k, p, "key %q given twice", k.Value)
			}
			continue
		}
		val, err := c.convert(v, p, pt.child(k.Value, pos{k.Line, k.Column}), depth+1)
		if err != nil {
			return err
		}
		out[k.Value] = val
	}
	for _, m := range merges {
		src := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			src = m.Content
		}
		for _, s := range src {
			for s.Kind == yaml.AliasNode {
				s = s.Alias
			}
			if s.Kind != yaml.MappingNode {
				return c.fail(m, path, "'<<' must merge a mapping")
			}
			c.aliasDepth++
			err := c.mergeMapping(s, path, pt, depth+1, out, false)
			c.aliasDepth--
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *yamlConv) scalar(n *yaml.Node, path []any) (any, error) {
	switch n.Tag {
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, c.fail(n, path, "%v", err)
		}
		return b, nil
	case "!!int", "!!float":
		var x any
		if err := n.Decode(&x); err != nil {
			return nil, c.fail(n, path, "%v", err)
		}
		switch x := x.(type) {
		case int:
			return json.Number(strconv.Itoa(x)), nil
		case uint64:
			return json.Number(strconv.FormatUint(x, 10)), nil
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return nil, c.fail(n, path, "%s is not a finite number", n.Value)
			}
			return json.Number(strconv.FormatFloat(x, 'g', -1, 64)), nil
		}
		return nil, c.fail(n, path, "unsupported number %q", n.Value)
	}
	return nil, c.fail(n, path, "unsupported YAML tag %s", n.Tag)
}

// decodeJSONTree parses a JSON plan strictly — no duplicate keys, no
// trailing data, bounded depth — and records the position of every member
// and item.
func decodeJSONTree(file string, data []byte) (any, *posTree, error) {
	j := &jsonConv{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	j.dec.UseNumber()
	pt := &posTree{at: j.next()}
	v, err := j.value(nil, pt, 0)
	if err == nil {
		if _, terr := j.dec.Token(); terr != io.EOF {
			err = errors.New("trailing data after the document")
		}
	}
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			fe.File = file
			return nil, nil, fe
		}
		p := j.next()
		var se *json.SyntaxError
		if errors.As(err, &se) {
			p.line, p.col = lineCol(data, int(se.Offset))
		}
		return nil, nil, &FieldError{File: file, Line: p.line, Column: p.col, Err: ErrSyntax, Msg: err.Error()}
	}
	return v, pt, nil
}

type jsonConv struct {
	data []byte
	dec  *json.Decoder
}

// next returns the position of the next token.
func (j *jsonConv) next() pos {
	off := int(j.dec.InputOffset())
	for off < len(j.data) {
		switch j.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	l, c := lineCol(j.data, off)
	return pos{l, c}
}

func (j *jsonConv) value(path []any, pt *posTree, depth int) (any, error) {
	if depth > envelope.MaxDepth {
		p := j.next()
		return nil, &FieldError{Line: p.line, Column: p.col, Path: envelope.FormatPath(path), Err: ErrSyntax, Msg: fmt.Sprintf("nesting deeper than %d", envelope.MaxDepth)}
	}
	tok, err := j.dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	if d == '[' {
		out := []any{}
		for i := 0; j.dec.More(); i++ {
			v, err := j.value(append(path, i), pt.child(i, j.next()), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		_, err := j.dec.Token()
		return out, err
	}
	out := map[string]any{}
	for j.dec.More() {
		at := j.next()
		kt, err := j.dec.Token()
		if err != nil {
			return nil, err
		}
		k := kt.(string)
		p := append(path, k)
		if _, dup := out[k]; dup {
			return nil, &FieldError{Line: at.line, Column: at.col, Path: envelope.FormatPath(p), Err: ErrSyntax, Msg: fmt.Sprintf("key %q given twice", k)}
		}
		if out[k], err = j.value(p, pt.child(k, at), depth+1); err != nil {
			return nil, err
		}
	}
	_, err = j.dec.Token()
	return out, err
}

func lineCol(data []byte, off int) (int, int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// sortErrors orders errors by line, then column, then path.
func sortErrors(errs []*FieldError) {
	sort.SliceStable(errs, func(a, b int) bool {
		x, y := errs[a], errs[b]
		if x.Line != y.Line {
			return x.Line < y.Line
		}
		if x.Column != y.Column {
			return x.Column < y.Column
		}
		return x.Path < y.Path
	})
}
