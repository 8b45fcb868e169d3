package durable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Result is a tool's success payload. It always carries "ok": true; encoded
// with MarshalCompact its keys are sorted, like Resilient Write's.
type Result map[string]any

// MarshalCompact encodes v compactly with sorted map keys and no HTML
// escaping, non-ASCII text kept as UTF-8: Resilient Write's
// json.dumps(..., separators=(",", ":"), sort_keys=True) up to the escaping
// of non-ASCII characters.
func MarshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// MarshalASCII is MarshalCompact with every non-ASCII character escaped as
// \uXXXX (surrogate pairs above the BMP), exactly as Python's json.dumps
// with ensure_ascii: an envelope is then byte-identical to Resilient
// Write's for the same fields.
func MarshalASCII(v any) ([]byte, error) {
	b, err := MarshalCompact(v)
	if err != nil {
		return nil, err
	}
	return asciiJSON(b), nil
}

// marshalIndent encodes v with two-space indentation, sorted keys, a trailing
// newline and non-ASCII kept verbatim (Python's indent=2, ensure_ascii=False).
func marshalIndent(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// asciiJSON rewrites every non-ASCII rune of a JSON text as a \u escape. It
// is correct because outside strings JSON is pure ASCII.
func asciiJSON(b []byte) []byte {
	ascii := true
	for _, c := range b {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return b
	}
	out := make([]byte, 0, len(b)+len(b)/4)
	for len(b) > 0 {
		c := b[0]
		if c < utf8.RuneSelf {
			out = append(out, c)
			b = b[1:]
			continue
		}
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		if r > 0xFFFF {
			r -= 0x10000
			out = fmt.Appendf(out, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			continue
		}
		out = fmt.Appendf(out, `\u%04x`, r)
	}
	return out
}

// decodeJSON decodes data keeping numbers as json.Number, so integers and
// decimals round-trip digit for digit.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after JSON value")
	}
	return nil
}
