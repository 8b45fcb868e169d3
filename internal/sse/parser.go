// Package sse reads and writes text/event-stream bodies (server-sent events)
// as the HTML Living Standard defines them: events end at a blank line; the
// fields are event, data (several data lines join with "\n"), id and retry;
// lines starting with ':' are comments; CRLF, LF and CR all end a line.
//
// Parser is push-style, for code that sees a stream as it passes through (a
// proxy parsing a copy of the bytes it forwards); Reader pulls events from an
// io.Reader; Writer emits events and flushes after each one; AppendEvent and
// AppendComment encode into a buffer, for code that assembles or rewrites a
// stream (a proxy re-emitting the events it parsed). Every encoder of an
// event stream in apiary goes through them, so the bytes on the wire have
// one definition.
package sse

import (
	"bytes"
	"errors"
	"strconv"
)

// Event is one dispatched server-sent event.
type Event struct {
	// Type is the event field; empty means the default type "message".
	Type string
	// Data is the data lines joined with "\n".
	Data string
	// ID is the last event id seen on the stream (it persists across events,
	// as the standard says).
	ID string
	// Retry is the reconnection time in milliseconds, or -1 if this event had
	// no valid retry field.
	Retry int
}

const bom = "\xEF\xBB\xBF"

// ErrLineTooLong is returned when a single line exceeds Parser.MaxLine.
var ErrLineTooLong = errors.New("sse: line too long")

// DefaultMaxLine is the line limit used when Parser.MaxLine is zero.
const DefaultMaxLine = 16 << 20

// Parser turns a byte stream, fed in arbitrary pieces, into events. The zero
// value is ready to use. A Parser is not safe for concurrent use.
type Parser struct {
	// MaxLine bounds the bytes buffered for one line; zero means
	// DefaultMaxLine.
	MaxLine int

	line   []byte // partial line carried between Feed calls
	skipLF bool   // the previous chunk ended in CR: a leading LF belongs to it
	bom    int    // bytes of the optional leading BOM matched; 3 = past it
	init   bool

	typ      string
	data     []byte
	hasData  bool
	lastID   string
	retry    int
	hasField bool // any field seen since the last dispatch
	err      error
}

// Feed parses p and calls emit for every event completed by it. After an
// error every later call returns the same error.
func (p *Parser) Feed(b []byte, emit func(Event)) error {
	if p.err != nil {
		return p.err
	}
	if !p.init {
		p.init = true
		p.retry = -1
	}
	// A UTF-8 BOM may start the stream (possibly split across feeds); it is
	// not part of the first line.
	for p.bom < len(bom) && len(b) > 0 {
		if b[0] != bom[p.bom] {
			p.line = append(p.line, bom[:p.bom]...)
			p.bom = len(bom)
			break
		}
		p.bom++
		b = b[1:]
	}
	if p.skipLF && len(b) > 0 {
		p.skipLF = false
		if b[0] == '\n' {
			b = b[1:]
		}
	}
	max := p.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			if len(p.line)+len(b) > max {
				p.err = ErrLineTooLong
				return p.err
			}
			p.line = append(p.line, b...)
			return nil
		}
		var line []byte
		if len(p.line) > 0 {
			if len(p.line)+i > max {
				p.err = ErrLineTooLong
				return p.err
			}
			p.line = append(p.line, b[:i]...)
			line = p.line
		} else {
			if i > max {
				p.err = ErrLineTooLong
				return p.err
			}
			line = b[:i]
		}
		if b[i] == '\r' {
			if i+1 < len(b) {
				if b[i+1] == '\n' {
					i++
				}
			} else {
				p.skipLF = true
			}
		}
		b = b[i+1:]
		p.processLine(line, emit)
		p.line = p.line[:0]
	}
	return nil
}

// Pending reports whether the stream so far ends inside an event: bytes of an
// unfinished line, or fields not yet dispatched by a blank line. A stream that
// ends while Pending is true was truncated.
func (p *Parser) Pending() bool { return len(p.line) > 0 || p.hasField }

func (p *Parser) processLine(line []byte, emit func(Event)) {
	if len(line) == 0 {
		p.dispatch(emit)
		return
	}
	if line[0] == ':' {
		return // comment
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "event":
		p.typ = string(value)
		p.hasField = true
	case "data":
		if p.hasData {
			p.data = append(p.data, '\n')
		}
		p.data = append(p.data, value...)
		p.hasData = true
		p.hasField = true
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			p.lastID = string(value)
		}
		p.hasField = true
	case "retry":
		if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 && isDigits(value) {
			p.retry = n
		}
		p.hasField = true
	default:
		// Unknown fields are ignored, as the standard requires.
	}
}

// dispatch emits the buffered event. As the standard says, an event without
// data is not dispatched, but its fields are reset.
func (p *Parser) dispatch(emit func(Event)) {
	if p.hasData {
		emit(Event{Type: p.typ, Data: string(p.data), ID: p.lastID, Retry: p.retry})
	}
	p.typ = ""
	p.data = p.data[:0]
	p.hasData = false
	p.hasField = false
	p.retry = -1
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}
