package strictyaml

import (
	"bytes"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse reads the one YAML document in data; file names it in errors. An
// empty file (or one of only comments) gives an Empty document, not an
// error. On failure the error is Errors, holding every problem found.
func Parse(file string, data []byte, opt Options) (*Document, error) {
	o := opt.withDefaults()
	c := &collector{file: file}
	data, ok := prepare(c, data, o)
	if !ok {
		return nil, c.err()
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return &Document{file: file}, nil
	} else if err != nil {
		c.add(syntaxPos(err), nil, ErrSyntax, "%s", syntaxMsg(err))
		return nil, c.err()
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		c.add(syntaxPos(err), nil, ErrSyntax, "%s", syntaxMsg(err))
		return nil, c.err()
	default:
		c.add(Pos{Line: max(extra.Line, 1)}, nil, ErrSyntax, "a second YAML document: the file must hold one")
		return nil, c.err()
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return &Document{file: file}, nil
		}
		root = root.Content[0]
	}
	b := &builder{c: c, o: o, building: map[*yaml.Node]bool{}}
	n := b.build(root, 0)
	if err := c.err(); err != nil {
		return nil, err
	}
	return &Document{file: file, root: n}, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// syntaxPos reads the line out of a yaml syntax error. The library leaves
// the line out for problems on the first line, and reports no column.
func syntaxPos(err error) Pos {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		l, _ := strconv.Atoi(m[1])
		return Pos{Line: l}
	}
	return Pos{Line: 1}
}

func syntaxMsg(err error) string {
	msg := err.Error()
	if m := yamlLine.FindStringIndex(msg); m != nil {
		return msg[m[1]:]
	}
	return strings.TrimPrefix(msg, "yaml: ")
}

type builder struct {
	c          *collector
	o          Options
	aliasDepth int                 // > 0 while building the target of an alias
	aliasNodes int                 // values built through aliases
	bombed     bool                // aliasNodes passed the limit (reported once)
	path       Path                // where build is: a stack, copied into errors
	building   map[*yaml.Node]bool // the collections being built, to catch aliases to themselves
}

func at(n *yaml.Node) Pos { return Pos{Line: n.Line, Column: n.Column} }

// build resolves n into a node; on a problem it records it and returns a
// null node, so that building goes on and finds the other problems.
func (b *builder) build(n *yaml.Node, depth int) *node {
	null := &node{kind: nullKind, tag: "!!null", at: at(n)}
	if b.c.full() || b.bombed {
		return null
	}
	if b.aliasDepth > 0 {
		if b.aliasNodes++; b.aliasNodes > b.o.MaxAliasNodes {
			b.bombed = true
			b.c.add(at(n), b.path, ErrLimit, "aliases expand to more than %d values", b.o.MaxAliasNodes)
			return null
		}
	}
	if depth > b.o.MaxDepth {
		b.c.add(at(n), b.path, ErrLimit, "nested deeper than %d levels", b.o.MaxDepth)
		return null
	}
	switch n.Kind {
	case yaml.AliasNode:
		return b.alias(n, depth)
	case yaml.ScalarNode:
		return b.scalar(n)
	case yaml.SequenceNode:
		if t := n.ShortTag(); t != "!!seq" {
			b.c.add(at(n), b.path, ErrSyntax, "unsupported YAML tag %s", t)
			return null
		}
		out := &node{kind: listKind, tag: "!!seq", at: at(n), items: make([]*node, len(n.Content))}
		b.building[n] = true
		for i, e := range n.Content {
			b.path = append(b.path, i)
			out.items[i] = b.build(e, depth+1)
			b.path = b.path[:len(b.path)-1]
		}
		delete(b.building, n)
		return out
	case yaml.MappingNode:
		if t := n.ShortTag(); t != "!!map" {
			b.c.add(at(n), b.path, ErrSyntax, "unsupported YAML tag %s", t)
			return null
		}
		out := &node{kind: mappingKind, tag: "!!map", at: at(n)}
		b.building[n] = true
		b.mapping(n, depth, out)
		delete(b.building, n)
		return out
	}
	b.c.add(at(n), b.path, ErrSyntax, "unsupported YAML node")
	return null
}

func (b *builder) alias(n *yaml.Node, depth int) *node {
	target := n.Alias
	if target == nil {
		b.c.add(at(n), b.path, ErrSyntax, "unknown anchor %q", n.Value)
		return &node{kind: nullKind, tag: "!!null", at: at(n)}
	}
	if b.building[target] {
		b.c.add(at(n), b.path, ErrSyntax, "alias *%s is inside the value it names", n.Value)
		return &node{kind: nullKind, tag: "!!null", at: at(n)}
	}
	b.aliasDepth++
	out := b.build(target, depth+1)
	b.aliasDepth--
	return out
}

// mapping fills out with n's members. A key given twice is an error;
// merged members ("<<") never override explicit ones, and earlier merge
// sources win over later ones.
func (b *builder) mapping(n *yaml.Node, depth int, out *node) {
	var merges []*yaml.Node
	index := make(map[string]int, len(n.Content)/2) // key → position in out.fields
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key, ok := b.key(k)
		if !ok {
			continue
		}
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if j, dup := index[key]; dup {
			b.c.add(at(k), append(b.path, key), ErrDuplicateKey, "key %q given twice (first at line %d)", key, out.fields[j].at.Line)
			continue
		}
		index[key] = len(out.fields)
		b.path = append(b.path, key)
		val := b.build(v, depth+1)
		b.path = b.path[:len(b.path)-1]
		out.fields = append(out.fields, field{key: key, at: at(k), val: val})
	}
	for _, m := range merges {
		srcs := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			srcs = m.Content
		}
		for _, s := range srcs {
			before := len(b.c.errs)
			src := b.build(s, depth+1)
			if src.kind != mappingKind {
				if len(b.c.errs) == before {
					b.c.add(at(s), b.path, ErrSyntax, "'<<' must merge a mapping")
				}
				continue
			}
			for _, f := range src.fields {
				if _, dup := index[f.key]; !dup {
					index[f.key] = len(out.fields)
					out.fields = append(out.fields, f)
				}
			}
		}
	}
}

// key returns a mapping key's text. Keys must be scalars other than null;
// a number or boolean key is taken as written.
func (b *builder) key(k *yaml.Node) (string, bool) {
	for k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		b.c.add(at(k), b.path, ErrSyntax, "a mapping key must be a string, not a %s", kindName(k))
		return "", false
	}
	switch t := k.ShortTag(); t {
	case "!!str", "!!int", "!!float", "!!bool", "!!timestamp", "!!merge":
		return k.Value, true
	case "!!null":
		b.c.add(at(k), b.path, ErrSyntax, "a mapping key must be a string, not null (quote it: %q)", k.Value)
	default:
		b.c.add(at(k), b.path, ErrSyntax, "unsupported YAML tag %s on a mapping key", t)
	}
	return "", false
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	}
	return "value"
}

func (b *builder) scalar(n *yaml.Node) *node {
	out := &node{kind: stringKind, tag: n.ShortTag(), text: n.Value, at: at(n)}
	switch out.tag {
	case "!!str", "!!timestamp", "!!binary", "!!merge":
		out.tag = "!!str"
	case "!!null":
		out.kind = nullKind
	case "!!bool":
		out.kind = boolKind
		if err := n.Decode(&out.b); err != nil {
			b.c.add(at(n), b.path, ErrSyntax, "%s is not a boolean", strconv.Quote(n.Value))
		}
	case "!!int", "!!float":
		out.kind = numberKind
		var x any
		if err := n.Decode(&x); err != nil {
			b.c.add(at(n), b.path, ErrSyntax, "%s is not a number", strconv.Quote(n.Value))
			return out
		}
		switch x := x.(type) {
		case int:
			out.num = strconv.Itoa(x)
		case int64:
			out.num = strconv.FormatInt(x, 10)
		case uint64:
			out.num = strconv.FormatUint(x, 10)
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				b.c.add(at(n), b.path, ErrSyntax, "%s is not a finite number", n.Value)
				out.kind, out.tag = nullKind, "!!null"
				return out
			}
			out.num = strconv.FormatFloat(x, 'g', -1, 64)
		default:
			b.c.add(at(n), b.path, ErrSyntax, "%s is not a number", strconv.Quote(n.Value))
		}
	default:
		b.c.add(at(n), b.path, ErrSyntax, "unsupported YAML tag %s", out.tag)
		out.kind = nullKind
	}
	return out
}
