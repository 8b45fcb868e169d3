package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDocumentSize bounds an envelope, receipt or plan document accepted by
// ParseJSON, and MaxDepth its nesting.
const (
	MaxDocumentSize = 8 << 20
	MaxDepth        = 64
)

// ParseJSON decodes one JSON document strictly into a tree of
// map[string]any, []any, string, json.Number, bool and nil. Unlike
// encoding/json it rejects duplicate object keys, trailing data, invalid
// UTF-8, nesting deeper than MaxDepth and documents over MaxDocumentSize;
// every such failure wraps ErrSyntax.
func ParseJSON(data []byte) (any, error) {
	if len(data) > MaxDocumentSize {
		return nil, fmt.Errorf("%w: document is %d bytes, limit %d", ErrSyntax, len(data), MaxDocumentSize)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: invalid UTF-8", ErrSyntax)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the document", ErrSyntax)
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("%w: nesting deeper than %d", ErrSyntax, MaxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
				}
				k := kt.(string) // the decoder guarantees string keys
				if _, dup := m[k]; dup {
					return nil, fmt.Errorf("%w: duplicate key %q", ErrSyntax, k)
				}
				if m[k], err = decodeValue(dec, depth+1); err != nil {
					return nil, err
				}
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
			}
			return m, nil
		case '[':
			a := []any{}
			for dec.More() {
				e, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, e)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
			}
			return a, nil
		}
		return nil, fmt.Errorf("%w: unexpected %v", ErrSyntax, t)
	default:
		return t, nil
	}
}

// Canonical encodes v as canonical JSON in the manner of RFC 8785 (JCS): no
// insignificant whitespace, object keys sorted by their UTF-16 code units,
// numbers in the shortest ECMAScript form, strings escaped minimally. v may be
// any value encoding/json can marshal; equal documents yield equal bytes, so
// the encoding can be hashed or signed.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	tree, err := ParseJSON(raw)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := writeCanonical(&b, tree); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeCanonical(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		writeString(b, x)
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return fmt.Errorf("%w: number %s: %v", ErrSyntax, x, err)
		}
		return writeNumber(b, f)
	case float64:
		return writeNumber(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if err := writeCanonical(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("%w: cannot encode %T canonically", ErrSyntax, v)
	}
	return nil
}

func compareUTF16(a, b string) int {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}

func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// writeNumber writes f as ECMAScript's Number.prototype.toString does, which
// is what RFC 8785 prescribes.
func writeNumber(b *bytes.Buffer, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%w: %v has no JSON form", ErrSyntax, f)
	}
	if f == 0 {
		b.WriteByte('0') // also for -0
		return nil
	}
	if f < 0 {
		b.WriteByte('-')
		f = -f
	}
	// Shortest round-tripping digits and exponent: d.ddddde±x.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1 // value = 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", n-k))
	case 0 < n && n <= 21:
		b.WriteString(digits[:n])
		b.WriteByte('.')
		b.WriteString(digits[n:])
	case -6 < n && n <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -n))
		b.WriteString(digits)
	default:
		b.WriteByte(digits[0])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if n-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(n - 1))
	}
	return nil
}
