package strictyaml

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

var classes = []error{ErrSyntax, ErrLimit, ErrDuplicateKey, ErrUnknownField, ErrType}

// checkErrors: a failure is a non-empty Errors whose every entry names the
// file, a line and one class.
func checkErrors(t *testing.T, err error, file string) {
	t.Helper()
	var es Errors
	if !errors.As(err, &es) || len(es) == 0 || len(es) > maxErrors {
		t.Fatalf("error %v is not 1 to %d Errors", err, maxErrors)
	}
	for _, e := range es {
		n := 0
		for _, c := range classes {
			if errors.Is(e, c) {
				n++
			}
		}
		if n != 1 || e.File != file || e.Line < 1 {
			t.Fatalf("unclassified or unlocated error %+v", e)
		}
	}
}

// checkDocument: the generic tree survives JSON, every value in it can be
// located, and decoding into interface{} gives the same tree.
func checkDocument(t *testing.T, d *Document) {
	t.Helper()
	v := d.Value()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("value does not encode: %v", err)
	}
	back, err := ParseJSON("back.json", b, Options{MaxDepth: 1 << 20, MaxBytes: 1 << 30})
	if err != nil {
		t.Fatalf("value's JSON does not parse: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(back.Value(), v) {
		t.Fatalf("value changed through JSON:\n%#v\n%#v", v, back.Value())
	}
	var walk func(v any, p Path)
	walk = func(v any, p Path) {
		if !d.Has(p) || d.Pos(p).Line < 1 {
			t.Fatalf("path %v of the value is not in the document", p)
		}
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(e, append(p[:len(p):len(p)], k))
			}
		case []any:
			for i, e := range v {
				walk(e, append(p[:len(p):len(p)], i))
			}
		}
	}
	walk(v, Path{})
	var out any
	if err := d.Decode(&out); err != nil {
		t.Fatalf("decoding into interface{}: %v", err)
	}
	if !reflect.DeepEqual(out, v) {
		t.Fatalf("Decode into interface{} differs from Value:\n%#v\n%#v", out, v)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"a: 1\nb: [x, {c: d}]\n",
		"base: &b {k: v}\nuse: {<<: *b, k: w}\n",
		"a: &a [1, *a]\n",
		"a: 1\na: 2\n",
		"x: !!binary aGk=\ny: 2001-12-14\nz: 0x1F\n",
		"---\na: 1\n...\n",
		"a: 1\n---\nb: 2\n",
		"\ufeff[1, 2.5, -3, .inf]\n",
		"? [a]\n: b\n",
		"{\"a\": [1, \"\\u00e9\"]}",
		"a: |\n  text\n  more\nb: >-\n  folded\n",
		"kind: command\ncount: lots\nsub: {cont: 1}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse("f.yaml", data, Options{MaxAliasNodes: 1 << 14})
		if err != nil {
			if d != nil {
				t.Fatal("a document and an error")
			}
			checkErrors(t, err, "f.yaml")
			return
		}
		checkDocument(t, d)
		// Decoding into a struct never panics; its errors are located.
		var s sample
		if err := d.Decode(&s); err != nil {
			checkErrors(t, err, "f.yaml")
		}
	})
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5e3, "x\/y", null, true]}`, `{"a": 1, "a": 2}`, `[[[]]]`, `{"a":1} x`, `"\u00e9"`, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseJSON("f.json", data, Options{})
		if err != nil {
			checkErrors(t, err, "f.json")
			return
		}
		if len(bytes.TrimSpace(data)) > 0 && !json.Valid(bytes.TrimPrefix(data, []byte("\ufeff"))) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		var std any
		dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff"))))
		dec.UseNumber()
		if err := dec.Decode(&std); err == nil && !reflect.DeepEqual(std, d.Value()) {
			t.Fatalf("differs from encoding/json:\n%#v\n%#v", std, d.Value())
		}
		checkDocument(t, d)
	})
}
