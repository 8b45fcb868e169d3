package llmapi

import (
	"bytes"
	"errors"
)

// Framing errors of the splitters. After one, a splitter returns it on every
// call.
var (
	ErrFrameTooLarge = errors.New("llmapi: stream frame too large")
	ErrBadFraming    = errors.New("llmapi: stream framing is not as expected")
)

// DefaultMaxFrame bounds one buffered NDJSON line or JSON array element
// when a splitter's Max is zero.
const DefaultMaxFrame = 16 << 20

// LineSplitter splits newline-delimited JSON fed in arbitrary pieces. Lines
// end at '\n'; a trailing '\r' is dropped and blank lines are skipped. Only an
// unfinished line is buffered. The zero value is ready to use; it is not safe
// for concurrent use.
type LineSplitter struct {
	// Max bounds a buffered line; zero means DefaultMaxFrame.
	Max int

	buf []byte
	err error
}

// Feed calls emit for every line completed by p. The slice passed to emit is
// valid only during the call.
func (l *LineSplitter) Feed(p []byte, emit func(line []byte)) error {
	if l.err != nil {
		return l.err
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(l.buf)+len(p) > maxOr(l.Max) {
				l.err = ErrFrameTooLarge
				return l.err
			}
			l.buf = append(l.buf, p...)
			return nil
		}
		line := p[:i]
		if len(l.buf) > 0 {
			if len(l.buf)+i > maxOr(l.Max) {
				l.err = ErrFrameTooLarge
				return l.err
			}
			l.buf = append(l.buf, line...)
			line = l.buf
		}
		emitLine(line, emit)
		l.buf = l.buf[:0]
		p = p[i+1:]
	}
	return nil
}

// Flush emits a last line that had no newline; call it once at the end of
// the stream.
func (l *LineSplitter) Flush(emit func(line []byte)) error {
	if l.err != nil {
		return l.err
	}
	emitLine(l.buf, emit)
	l.buf = l.buf[:0]
	return nil
}

// Pending reports whether an unfinished, non-blank line is buffered.
func (l *LineSplitter) Pending() bool { return len(bytes.TrimSpace(l.buf)) > 0 }

func emitLine(line []byte, emit func([]byte)) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(bytes.TrimSpace(line)) > 0 {
		emit(line)
	}
}

func maxOr(n int) int {
	if n <= 0 {
		return DefaultMaxFrame
	}
	return n
}

// ArraySplitter delivers the elements of one JSON array (Gemini's
// streamGenerateContent without alt=sse: "[{…},\r\n{…}]") as each completes,
// across arbitrary reads. Only the element being read is buffered. A body
// that is a single JSON object instead of an array (an error reply) is
// delivered as one element. Elements are not validated; their consumer
// parses them. The zero value is ready to use; it is not safe for concurrent
// use.
type ArraySplitter struct {
	// Max bounds a buffered element; zero means DefaultMaxFrame.
	Max int

	state  arrayState
	depth  int
	inStr  bool
	esc    bool
	scalar bool // the element is a number or literal: it ends at a delimiter
	single bool // the body is one object, not an array
	buf    []byte
	err    error
}

type arrayState uint8

const (
	arrBefore  arrayState = iota // before '['
	arrBetween                   // after '[' or ',': an element or ']' comes next
	arrElem                      // inside an element
	arrAfter                     // after an element: ',' or ']' comes next
	arrDone                      // after ']'
)

// Feed calls emit for every element completed by p. The slice passed to
// emit is valid only during the call.
func (a *ArraySplitter) Feed(p []byte, emit func(elem []byte)) error {
	if a.err != nil {
		return a.err
	}
	start := -1 // start in p of the element being read, if it began in p
	if a.state == arrElem {
		start = 0
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch a.state {
		case arrBefore:
			switch {
			case c == '[':
				a.state = arrBetween
			case c == '{':
				a.single = true
				a.beginElem(c)
				start = i
			case !isSpace(c):
				a.err = ErrBadFraming
				return a.err
			}
		case arrBetween:
			switch {
			case c == ']':
				a.state = arrDone
			case c == ',':
				// An empty element ("[,") is tolerated.
			case !isSpace(c):
				a.beginElem(c)
				start = i
			}
		case arrAfter:
			switch {
			case c == ',':
				a.state = arrBetween
			case c == ']':
				a.state = arrDone
			case !isSpace(c):
				a.err = ErrBadFraming
				return a.err
			}
		case arrElem:
			if a.scalar {
				if isDelim(c) {
					// The number or literal ended before c; read c again
					// as the byte after the element.
					a.endElem(p[start:i], emit)
					start = -1
					i--
				}
				continue
			}
			if a.elemByte(c) {
				a.endElem(p[start:i+1], emit)
				start = -1
			}
		case arrDone:
			// Trailing bytes after the array are ignored.
		}
	}
	if a.state == arrElem && start >= 0 {
		if len(a.buf)+len(p)-start > maxOr(a.Max) {
			a.err = ErrFrameTooLarge
			return a.err
		}
		a.buf = append(a.buf, p[start:]...)
	}
	return nil
}

// Closed reports whether the array's closing ']' (or the end of a single
// object) was seen.
func (a *ArraySplitter) Closed() bool { return a.state == arrDone }

// Pending reports whether an element is partly read.
func (a *ArraySplitter) Pending() bool { return a.state == arrElem }

func (a *ArraySplitter) beginElem(c byte) {
	a.state = arrElem
	a.depth, a.inStr, a.esc, a.scalar = 0, false, false, false
	switch c {
	case '{', '[':
		a.depth = 1
	case '"':
		a.inStr = true
	default:
		a.scalar = true
	}
}

// elemByte advances the scanner of an object, array or string element over
// one byte after the first and reports whether it ended the element.
func (a *ArraySplitter) elemByte(c byte) bool {
	switch {
	case a.esc:
		a.esc = false
	case a.inStr:
		switch c {
		case '\\':
			a.esc = true
		case '"':
			a.inStr = false
			return a.depth == 0
		}
	case c == '"':
		a.inStr = true
	case c == '{' || c == '[':
		a.depth++
	case c == '}' || c == ']':
		a.depth--
		return a.depth == 0
	}
	return false
}

// endElem emits the element whose last bytes in the current chunk are tail.
func (a *ArraySplitter) endElem(tail []byte, emit func([]byte)) {
	elem := tail
	if len(a.buf) > 0 {
		a.buf = append(a.buf, tail...)
		elem = a.buf
	}
	emit(elem)
	a.buf = a.buf[:0]
	a.state = arrAfter
	if a.single {
		a.state = arrDone
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDelim(c byte) bool { return c == ',' || c == ']' || isSpace(c) }
