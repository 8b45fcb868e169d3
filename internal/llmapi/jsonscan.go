package llmapi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrMalformedBody is wrapped by every error about a body that is not valid
// JSON (or not the JSON object an endpoint requires). Use errors.As with
// *SyntaxError for the byte offset.
var ErrMalformedBody = errors.New("llmapi: malformed body")

// SyntaxError describes malformed JSON: Offset is the byte offset at which
// the problem was found. It matches ErrMalformedBody with errors.Is.
type SyntaxError struct {
	Offset int64
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("llmapi: malformed body at offset %d: %s", e.Offset, e.Msg)
}

// Is reports whether target is ErrMalformedBody.
func (e *SyntaxError) Is(target error) bool { return target == ErrMalformedBody }

// maxDepth bounds nesting, as encoding/json does, so hostile input cannot
// exhaust the stack.
const maxDepth = 10000

// shortWords is how many 8-byte words rawString tests before it switches to
// bytes.IndexByte.
const shortWords = 4

// scanner is a small, allocation-free JSON reader: it walks a document once,
// validates the syntax of everything it passes over and lets the caller pick
// out the few members it needs. The first error is sticky; after it every
// method is a no-op and loops end.
type scanner struct {
	data  []byte
	pos   int
	depth int
	err   *SyntaxError
	key   []byte // the current member name (unescaped), set by member
	kbuf  []byte // scratch for unescaped member names
}

func newScanner(data []byte) scanner { return scanner{data: data} }

func (s *scanner) fail(msg string) {
	if s.err == nil {
		s.err = &SyntaxError{Offset: int64(s.pos), Msg: msg}
	}
	s.pos = len(s.data)
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the first byte of the next value (after whitespace), or 0.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// end checks that only whitespace follows the top-level value.
func (s *scanner) end() {
	s.ws()
	if s.err == nil && s.pos < len(s.data) {
		s.fail("invalid character after top-level value")
	}
}

// enterObject consumes '{' and returns true, or skips a non-object value
// (null, number, ...) and returns false.
func (s *scanner) enterObject() bool {
	if s.peek() != '{' {
		s.skip()
		return false
	}
	if s.depth++; s.depth > maxDepth {
		s.fail("exceeded max depth")
		return false
	}
	s.pos++
	return true
}

// member advances to the i-th member of the object being read (i counts
// from 0). It returns true with s.key set and the position at the member's
// value, which the caller must consume (read or skip); or false after the
// closing '}' or on error.
func (s *scanner) member(i int) bool {
	if s.err != nil {
		return false
	}
	c := s.peek()
	if c == '}' {
		s.pos++
		s.depth--
		return false
	}
	if i > 0 {
		if c != ',' {
			s.fail("expected ',' or '}' after object member")
			return false
		}
		s.pos++
		c = s.peek()
	}
	if c != '"' {
		s.fail("expected string for object member name")
		return false
	}
	raw, esc := s.rawString()
	if s.err != nil {
		return false
	}
	s.key = raw
	if esc {
		s.kbuf = unescape(s.kbuf[:0], raw)
		s.key = s.kbuf
	}
	if s.peek() != ':' {
		s.fail("expected ':' after object member name")
		return false
	}
	s.pos++
	return true
}

// enterArray consumes '[' and returns true, or skips a non-array value and
// returns false.
func (s *scanner) enterArray() bool {
	if s.peek() != '[' {
		s.skip()
		return false
	}
	if s.depth++; s.depth > maxDepth {
		s.fail("exceeded max depth")
		return false
	}
	s.pos++
	return true
}

// elem advances to the i-th element of the array being read; the caller must
// consume the value. It returns false after the closing ']' or on error.
func (s *scanner) elem(i int) bool {
	if s.err != nil {
		return false
	}
	c := s.peek()
	if c == ']' {
		s.pos++
		s.depth--
		return false
	}
	if i > 0 {
		if c != ',' {
			s.fail("expected ',' or ']' after array element")
			return false
		}
		s.pos++
	}
	if s.peek() == 0 {
		s.fail("unexpected end of JSON input")
		return false
	}
	return true
}

// skip passes over one value of any kind, validating it.
func (s *scanner) skip() {
	switch c := s.peek(); c {
	case '{':
		if s.enterObject() {
			for i := 0; s.member(i); i++ {
				s.skip()
			}
		}
	case '[':
		if s.enterArray() {
			for i := 0; s.elem(i); i++ {
				s.skip()
			}
		}
	case '"':
		s.rawString()
	case 't':
		s.literal("true")
	case 'f':
		s.literal("false")
	case 'n':
		s.literal("null")
	case 0:
		s.fail("unexpected end of JSON input")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			s.number()
			return
		}
		s.fail(fmt.Sprintf("invalid character %q looking for beginning of value", c))
	}
}

func (s *scanner) literal(lit string) {
	if len(s.data)-s.pos >= len(lit) && string(s.data[s.pos:s.pos+len(lit)]) == lit {
		s.pos += len(lit)
		return
	}
	s.fail("invalid literal")
}

// number consumes a JSON number and returns its text.
func (s *scanner) number() []byte {
	start := s.pos
	d := s.data
	i := s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		s.pos = i
		s.fail("invalid number")
		return nil
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			s.pos = i
			s.fail("invalid number: no digits after decimal point")
			return nil
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			s.pos = i
			s.fail("invalid number: no digits in exponent")
			return nil
		}
	}
	s.pos = i
	return d[start:i]
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// rawString consumes a string and returns its bytes between the quotes (with
// escapes left in) and whether it contains escapes. It validates escapes and
// rejects control characters. Quotes and backslashes are found with
// bytes.IndexByte (vectorised), so long strings cost little; the work is
// linear however many escapes a string has.
func (s *scanner) rawString() (raw []byte, escaped bool) {
	d := s.data
	start := s.pos + 1 // past the opening quote
	i := start
	// Most strings are short (names, ids, types): test up to four 8-byte
	// words for '"', '\\' or a control byte before calling IndexByte.
	for n := 0; n < shortWords && i+8 <= len(d); n++ {
		w := binary.LittleEndian.Uint64(d[i:])
		q := w ^ (lsb * '"')
		b := w ^ (lsb * '\\')
		if (((q-lsb)&^q)|((b-lsb)&^b)|((w-lsb*0x20)&^w))&msb == 0 {
			i += 8
			continue
		}
		for end := i + 8; i < end; i++ {
			switch c := d[i]; {
			case c == '"':
				s.pos = i + 1
				return d[start:i], false
			case c == '\\':
				return s.rawStringFrom(start, i)
			case c < 0x20:
				s.pos = i
				s.fail("invalid control character in string")
				return nil, false
			}
		}
	}
	return s.rawStringFrom(start, i)
}

// rawStringFrom finishes rawString from i, everything in d[start:i] being
// plain characters. The closing quote is found with bytes.IndexByte; the
// bytes before it are checked for escapes and control bytes eight at a time.
func (s *scanner) rawStringFrom(start, i int) (raw []byte, escaped bool) {
	d := s.data
	for {
		q := bytes.IndexByte(d[i:], '"')
		if q < 0 {
			s.pos = len(d)
			s.fail("unexpected end of JSON input in string")
			return nil, false
		}
		end := i + q
		for i <= end {
			for i+8 <= end {
				w := binary.LittleEndian.Uint64(d[i:])
				b := w ^ (lsb * '\\')
				if (((b-lsb)&^b)|((w-lsb*0x20)&^w))&msb != 0 {
					break
				}
				i += 8
			}
			for i < end && d[i] != '\\' && d[i] >= 0x20 {
				i++
			}
			if i == end {
				s.pos = end + 1
				return d[start:end], escaped
			}
			if d[i] < 0x20 {
				s.pos = i
				s.fail("invalid control character in string")
				return nil, false
			}
			escaped = true
			if i+1 >= len(d) {
				s.pos = i
				s.fail("unexpected end of JSON input in string escape")
				return nil, false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) || !isHex4(d[i+2:i+6]) {
					s.pos = i
					s.fail("invalid \\u escape in string")
					return nil, false
				}
				i += 6
			default:
				s.pos = i
				s.fail("invalid escape in string")
				return nil, false
			}
		}
		// An escape took the quote at end (\"): look for the next one.
	}
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// str reads a string value and returns it unescaped. A value of another kind
// is skipped and ok is false.
func (s *scanner) str() (v string, ok bool) {
	if s.peek() != '"' {
		s.skip()
		return "", false
	}
	raw, esc := s.rawString()
	if s.err != nil {
		return "", false
	}
	if !esc {
		return string(raw), true
	}
	return string(unescape(nil, raw)), true
}

// strLen reads a string value and returns the length of its raw text; a value
// of another kind is skipped and counts 0.
func (s *scanner) strLen() int64 {
	if s.peek() != '"' {
		s.skip()
		return 0
	}
	raw, _ := s.rawString()
	return int64(len(raw))
}

// boolean reads true or false; anything else (null included) is skipped and
// ok is false.
func (s *scanner) boolean() (v, ok bool) {
	switch s.peek() {
	case 't':
		s.literal("true")
		return true, s.err == nil
	case 'f':
		s.literal("false")
		return false, s.err == nil
	}
	s.skip()
	return false, false
}

// int reads a number as an int64, truncating a fraction and saturating at
// the int64 range; anything else (null included) is skipped and ok is false.
func (s *scanner) int() (int64, bool) {
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		s.skip()
		return 0, false
	}
	num := s.number()
	if s.err != nil {
		return 0, false
	}
	var n int64
	neg := false
	i := 0
	if num[0] == '-' {
		neg = true
		i = 1
	}
	for ; i < len(num); i++ {
		c := num[i]
		if c < '0' || c > '9' {
			// Fraction or exponent: let strconv do the arithmetic.
			f, _ := strconv.ParseFloat(string(num), 64)
			return saturate(f), true
		}
		if n > (math.MaxInt64-int64(c-'0'))/10 {
			if neg {
				return math.MinInt64, true
			}
			return math.MaxInt64, true
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

func saturate(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// unescape appends the decoded form of a JSON string's raw contents (already
// validated by rawString) to dst.
func unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch raw[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := rune(hex4(raw[i+2:]))
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2 := utf16.DecodeRune(r, rune(hex4(raw[i+2:]))); r2 != utf8.RuneError {
						dst = utf8.AppendRune(dst, r2)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, raw[i+1])
		}
		i += 2
	}
	return dst
}

func hex4(b []byte) int {
	n := 0
	for _, c := range b[:4] {
		n <<= 4
		switch {
		case c >= '0' && c <= '9':
			n |= int(c - '0')
		case c >= 'a' && c <= 'f':
			n |= int(c - 'a' + 10)
		default:
			n |= int(c - 'A' + 10)
		}
	}
	return n
}
