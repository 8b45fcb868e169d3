package llmapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// validate runs the scanner over a whole document.
func validate(data []byte) error {
	s := newScanner(data)
	s.skip()
	s.end()
	if s.err != nil {
		return s.err
	}
	return nil
}

var scannerSeeds = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e-3`, `-12E+4`, `"x"`,
	`{"a":[1,2,{"b":null}],"c":"\u00e9\ud83d\ude00\n"}`,
	` { "a" : 1 , "b" : [ ] } `,
	`{"a":1,}`, `[1,]`, `{"a"}`, `{"a":}`, `{a:1}`, `[1 2]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
	`"abc`, `"a\qb"`, `"a\u12G4"`, "\"a\x01b\"", `tru`, `nul`, `{"a":1}x`, `[`, `{`, `"`,
	`{"a":"0123456789abcdef0123456789abcdef\"more"}`, `["\\\\"]`,
	strings.Repeat("[", 100) + strings.Repeat("]", 100),
}

func TestScannerMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, in := range scannerSeeds {
		got := validate([]byte(in)) == nil
		if want := json.Valid([]byte(in)); got != want {
			t.Errorf("validate(%q) valid = %v, encoding/json says %v", in, got, want)
		}
	}
}

func TestScannerErrorOffset(t *testing.T) {
	t.Parallel()
	err := validate([]byte(`{"model": "x", "stream": tru}`))
	var se *SyntaxError
	if !errors.As(err, &se) || !errors.Is(err, ErrMalformedBody) {
		t.Fatalf("err = %v, want a *SyntaxError matching ErrMalformedBody", err)
	}
	if se.Offset != 25 {
		t.Errorf("offset = %d, want 25 (the bad literal)", se.Offset)
	}
}

func TestScannerDepthLimit(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	if err := validate([]byte(deep)); !errors.Is(err, ErrMalformedBody) {
		t.Errorf("depth %d accepted: %v", maxDepth+1, err)
	}
	ok := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	if err := validate([]byte(ok)); err != nil {
		t.Errorf("depth %d rejected: %v", maxDepth, err)
	}
}

func TestScannerStringsAndInts(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\ud83d\ude00"`, `"\ud800x"`, `"\udc00\ud800"`, `"日本"`} {
		var want string
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		s := newScanner([]byte(in))
		got, ok := s.str()
		if !ok || got != want {
			t.Errorf("str(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
	ints := map[string]int64{
		`42`: 42, `-7`: -7, `1.9`: 1, `1e3`: 1000, `99999999999999999999`: 1<<63 - 1, `-99999999999999999999`: -1 << 63, `1e400`: 1<<63 - 1,
	}
	for in, want := range ints {
		s := newScanner([]byte(in))
		if got, ok := s.int(); !ok || got != want {
			t.Errorf("int(%s) = %d, %v; want %d", in, got, ok, want)
		}
	}
	s := newScanner([]byte(`null`))
	if _, ok := s.int(); ok {
		t.Error("int(null) ok = true")
	}
}

func FuzzScanner(f *testing.F) {
	for _, s := range scannerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := validate(data)
		if want := json.Valid(data); (err == nil) != want {
			t.Fatalf("validate(%q) = %v, encoding/json valid = %v", data, err, want)
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > int64(len(data)) {
				t.Fatalf("bad error %v for %q", err, data)
			}
			return
		}
		var v any
		if json.Unmarshal(data, &v) == nil {
			if str, ok := v.(string); ok {
				s := newScanner(data)
				if got, _ := s.str(); got != str && utf8.Valid(data) {
					t.Fatalf("str(%q) = %q, want %q", data, got, str)
				}
			}
		}
	})
}
