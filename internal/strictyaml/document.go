package strictyaml

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Document is one parsed document: a tree of values with the place each
// was written. It is immutable and safe for concurrent use.
type Document struct {
	file string
	root *node // nil: the file holds no document
}

type kind uint8

const (
	nullKind kind = iota
	boolKind
	numberKind
	stringKind
	mappingKind
	listKind
)

// node is a resolved value: aliases expanded, merge keys applied.
type node struct {
	kind kind
	tag  string // the YAML tag it resolved to (!!str, !!int, ...), for messages
	text string // a scalar's text as written (for a string, its value)
	num  string // numberKind: the value in decimal, as a json.Number
	b    bool   // boolKind
	at   Pos
	// mappingKind: the members in file order (merged ones last).
	fields []field
	// listKind
	items []*node
}

type field struct {
	key string
	at  Pos // where the key was written
	val *node
}

func (n *node) scalar() bool { return n.kind != mappingKind && n.kind != listKind }

func (n *node) lookup(key string) (*field, bool) {
	for i := range n.fields {
		if n.fields[i].key == key {
			return &n.fields[i], true
		}
	}
	return nil, false
}

// File returns the name the document was parsed under.
func (d *Document) File() string { return d.file }

// Empty reports whether the file held no document at all (nothing, or only
// comments); an explicit null ("~") is not empty.
func (d *Document) Empty() bool { return d.root == nil }

// Value returns the document as the generic tree JSON Schema validators
// and encoding/json work on: map[string]any, []any, string, json.Number,
// bool and nil. Each call returns a new tree the caller may modify.
func (d *Document) Value() any {
	if d.root == nil {
		return nil
	}
	return d.root.value()
}

func (n *node) value() any {
	switch n.kind {
	case boolKind:
		return n.b
	case numberKind:
		return json.Number(n.num)
	case stringKind:
		return n.text
	case mappingKind:
		m := make(map[string]any, len(n.fields))
		for _, f := range n.fields {
			m[f.key] = f.val.value()
		}
		return m
	case listKind:
		s := make([]any, len(n.items))
		for i, it := range n.items {
			s[i] = it.value()
		}
		return s
	}
	return nil
}

// Pos returns where path was written: a mapping member at its key, a list
// item at the item. When path does not exist, it returns the place of its
// nearest ancestor that does; the root is at 1:1 in an empty document.
func (d *Document) Pos(path Path) Pos {
	at, _ := d.find(path)
	return at
}

// Has reports whether path exists in the document.
func (d *Document) Has(path Path) bool {
	_, ok := d.find(path)
	return ok
}

// node returns the value at path, or nil.
func (d *Document) node(path Path) *node {
	n := d.root
	for _, k := range path {
		if n == nil {
			return nil
		}
		switch k := k.(type) {
		case string:
			f, ok := n.lookup(k)
			if n.kind != mappingKind || !ok {
				return nil
			}
			n = f.val
		case int:
			if n.kind != listKind || k < 0 || k >= len(n.items) {
				return nil
			}
			n = n.items[k]
		default:
			return nil
		}
	}
	return n
}

func (d *Document) find(path Path) (Pos, bool) {
	best := Pos{Line: 1, Column: 1}
	n := d.root
	if n == nil {
		return best, len(path) == 0
	}
	best = n.at
	for _, k := range path {
		switch k := k.(type) {
		case string:
			if n.kind != mappingKind {
				return best, false
			}
			f, ok := n.lookup(k)
			if !ok {
				return best, false
			}
			best, n = f.at, f.val
		case int:
			if n.kind != listKind || k < 0 || k >= len(n.items) {
				return best, false
			}
			n = n.items[k]
			best = n.at
		default:
			return best, false
		}
	}
	return best, true
}

// Errorf returns a problem of class located at path (see Pos), for the
// checks a caller makes after decoding.
func (d *Document) Errorf(class error, path Path, format string, args ...any) *Error {
	return &Error{File: d.file, Pos: d.Pos(path), Path: path, Err: class, Msg: fmt.Sprintf(format, args...)}
}

// prepare applies the checks common to YAML and JSON input and drops a
// UTF-8 byte-order mark.
func prepare(c *collector, data []byte, o Options) ([]byte, bool) {
	if len(data) > o.MaxBytes {
		c.add(Pos{Line: 1}, nil, ErrLimit, "file is %d bytes, limit %d", len(data), o.MaxBytes)
		return nil, false
	}
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		line, col := lineCol(data, off)
		c.add(Pos{Line: line, Column: col}, nil, ErrSyntax, "not valid UTF-8 (byte 0x%02x at offset %d)", data[off], off)
		return nil, false
	}
	return bytes.TrimPrefix(data, []byte("\ufeff")), true
}

// lineCol converts a byte offset into a 1-based line and column.
func lineCol(data []byte, off int) (int, int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}
