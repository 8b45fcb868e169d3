package strictyaml

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// ParseAuto reads a file that may be JSON or YAML: JSON (ParseJSON) when
// its first byte after a byte-order mark and blanks is '{', YAML (Parse)
// otherwise. A YAML flow mapping at the top ("{a: 1}") is therefore read
// as JSON, and refused.
func ParseAuto(file string, data []byte, opt Options) (*Document, error) {
	if t := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\ufeff")), " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return ParseJSON(file, data, opt)
	}
	return Parse(file, data, opt)
}

// ParseJSON reads one JSON document strictly into a Document: no
// duplicate keys, no trailing data, bounded size and depth. YAML would
// accept most JSON, but also trailing commas and text after the document,
// and it rejects JSON's "\/" escape; files that may be JSON go here.
func ParseJSON(file string, data []byte, opt Options) (*Document, error) {
	o := opt.withDefaults()
	c := &collector{file: file}
	data, ok := prepare(c, data, o)
	if !ok {
		return nil, c.err()
	}
	j := &jsonReader{c: c, o: o, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	j.dec.UseNumber()
	if len(bytes.TrimSpace(data)) == 0 {
		return &Document{file: file}, nil
	}
	root, err := j.value(0)
	if err == nil {
		at := j.next()
		if _, terr := j.dec.Token(); terr != io.EOF {
			c.add(at, nil, ErrSyntax, "trailing data after the document")
			return nil, c.err()
		}
	}
	if err != nil {
		if !errors.Is(err, errReported) {
			at := j.next()
			var se *json.SyntaxError
			if errors.As(err, &se) {
				at.Line, at.Column = lineCol(data, int(se.Offset))
			}
			msg := err.Error()
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				msg = "unexpected end of the document"
			}
			c.add(at, nil, ErrSyntax, "%s", msg)
		}
		return nil, c.err()
	}
	return &Document{file: file, root: root}, nil
}

// errReported stops reading after a problem the collector already has.
var errReported = errors.New("reported")

type jsonReader struct {
	c    *collector
	o    Options
	data []byte
	dec  *json.Decoder
	path Path // where value is: a stack, copied into errors
}

// next returns the position of the next token.
func (j *jsonReader) next() Pos {
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
	return Pos{Line: l, Column: c}
}

func (j *jsonReader) value(depth int) (*node, error) {
	at := j.next()
	if depth > j.o.MaxDepth {
		j.c.add(at, j.path, ErrLimit, "nested deeper than %d levels", j.o.MaxDepth)
		return nil, errReported
	}
	tok, err := j.dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: nullKind, tag: "!!null", text: "null", at: at}, nil
	case bool:
		return &node{kind: boolKind, tag: "!!bool", text: strconv.FormatBool(t), b: t, at: at}, nil
	case json.Number:
		tag := "!!float"
		if _, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			tag = "!!int"
		}
		return &node{kind: numberKind, tag: tag, text: string(t), num: string(t), at: at}, nil
	case string:
		return &node{kind: stringKind, tag: "!!str", text: t, at: at}, nil
	case json.Delim:
		if t == '[' {
			out := &node{kind: listKind, tag: "!!seq", at: at}
			for i := 0; j.dec.More(); i++ {
				j.path = append(j.path, i)
				v, err := j.value(depth + 1)
				j.path = j.path[:len(j.path)-1]
				if err != nil {
					return nil, err
				}
				out.items = append(out.items, v)
			}
			_, err := j.dec.Token()
			return out, err
		}
		out := &node{kind: mappingKind, tag: "!!map", at: at}
		index := map[string]int{}
		for j.dec.More() {
			kat := j.next()
			kt, err := j.dec.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string) // the decoder guarantees string keys
			if i, dup := index[k]; dup {
				j.c.add(kat, append(j.path, k), ErrDuplicateKey, "key %q given twice (first at line %d)", k, out.fields[i].at.Line)
				return nil, errReported
			}
			j.path = append(j.path, k)
			v, err := j.value(depth + 1)
			j.path = j.path[:len(j.path)-1]
			if err != nil {
				return nil, err
			}
			index[k] = len(out.fields)
			out.fields = append(out.fields, field{key: k, at: kat, val: v})
		}
		_, err := j.dec.Token()
		return out, err
	}
	return nil, errors.New("unexpected token")
}
