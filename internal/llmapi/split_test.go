package llmapi

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func splitLines(chunks []string, flush bool) ([]string, error) {
	var l LineSplitter
	var got []string
	emit := func(b []byte) { got = append(got, string(b)) }
	for _, c := range chunks {
		if err := l.Feed([]byte(c), emit); err != nil {
			return got, err
		}
	}
	if flush {
		return got, l.Flush(emit)
	}
	return got, nil
}

func TestLineSplitter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		flush bool
		want  []string
	}{
		{"lines", "{\"a\":1}\n{\"b\":2}\n", false, []string{`{"a":1}`, `{"b":2}`}},
		{"crlf and blank lines", "{\"a\":1}\r\n\r\n  \n{\"b\":2}\r\n", false, []string{`{"a":1}`, `{"b":2}`}},
		{"unterminated tail waits for flush", "{\"a\":1}\n{\"b\"", false, []string{`{"a":1}`}},
		{"flush emits the tail", "{\"a\":1}\n{\"b\":2}", true, []string{`{"a":1}`, `{"b":2}`}},
		{"flush of nothing", "", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for i := 0; i <= len(tt.in); i++ {
				got, err := splitLines([]string{tt.in[:i], tt.in[i:]}, tt.flush)
				if err != nil || !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("split at %d: got %q, %v; want %q", i, got, err, tt.want)
				}
			}
		})
	}
	l := LineSplitter{Max: 8}
	if err := l.Feed([]byte("0123456789"), func([]byte) {}); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("long line: err = %v", err)
	}
	if err := l.Feed([]byte("\n"), func([]byte) {}); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("error is not sticky: %v", err)
	}
}

func splitArray(chunks []string) (elems []string, closed bool, err error) {
	var a ArraySplitter
	for _, c := range chunks {
		if err := a.Feed([]byte(c), func(b []byte) { elems = append(elems, string(b)) }); err != nil {
			return elems, a.Closed(), err
		}
	}
	return elems, a.Closed(), nil
}

func TestArraySplitter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     string
		want   []string
		closed bool
	}{
		{"gemini layout", "[{\"a\": 1}\n,\r\n{\"b\": [2, {\"c\": \"]}\"}]}\n]", []string{`{"a": 1}`, `{"b": [2, {"c": "]}"}]}`}, true},
		{"escaped quotes and brackets in strings", `[{"t":"say \"}\" then \\"},{"u":"{["}]`, []string{`{"t":"say \"}\" then \\"}`, `{"u":"{["}`}, true},
		{"scalars", `[1, "two", true ,null,-3.5e2]`, []string{`1`, `"two"`, `true`, `null`, `-3.5e2`}, true},
		{"empty", " [ ] ", nil, true},
		{"unclosed", `[{"a":1},{"b":`, []string{`{"a":1}`}, false},
		{"single object body", ` {"error":{"code":400}} `, []string{`{"error":{"code":400}}`}, true},
		{"trailing bytes ignored", `[{"a":1}] junk`, []string{`{"a":1}`}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for i := 0; i <= len(tt.in); i++ {
				got, closed, err := splitArray([]string{tt.in[:i], tt.in[i:]})
				if err != nil || !reflect.DeepEqual(got, tt.want) || closed != tt.closed {
					t.Fatalf("split at %d: got %q closed=%v err=%v; want %q closed=%v", i, got, closed, err, tt.want, tt.closed)
				}
			}
			rng := rand.New(rand.NewPCG(3, 3))
			got, closed, err := splitArray(randomSplit(rng, tt.in))
			if err != nil || !reflect.DeepEqual(got, tt.want) || closed != tt.closed {
				t.Fatalf("random split: got %q closed=%v err=%v", got, closed, err)
			}
		})
	}
	for _, bad := range []string{`<html>`, `[{"a":1} {"b":2}]`, `x[`} {
		if _, _, err := splitArray([]string{bad}); !errors.Is(err, ErrBadFraming) {
			t.Errorf("%q: err = %v, want ErrBadFraming", bad, err)
		}
	}
	a := ArraySplitter{Max: 16}
	if err := a.Feed([]byte(`[{"a":"`+strings.Repeat("x", 32)), func([]byte) {}); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("large element: err = %v", err)
	}
}
