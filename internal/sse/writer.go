package sse

import (
	"bytes"
	"io"
	"strconv"
	"strings"
)

// Writer writes events to w and flushes after each one if w has a Flush
// method (http.ResponseWriter's flusher, or bufio.Writer).
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Event writes one event with the given type (omitted when empty) and data.
// Data containing newlines is split into several data lines.
func (w *Writer) Event(typ string, data []byte) error {
	return w.write(typ, "", data)
}

// EventID writes an event that also carries an id field.
func (w *Writer) EventID(typ, id string, data []byte) error {
	return w.write(typ, id, data)
}

// Comment writes a comment, which keeps idle connections alive.
func (w *Writer) Comment(text string) error {
	w.buf = AppendComment(w.buf[:0], text)
	return w.flush()
}

// Retry writes a retry field telling the client how long to wait before it
// reconnects.
func (w *Writer) Retry(ms int) error {
	w.buf = append(w.buf[:0], "retry: "...)
	w.buf = strconv.AppendInt(w.buf, int64(ms), 10)
	w.buf = append(w.buf, '\n', '\n')
	return w.flush()
}

func (w *Writer) write(typ, id string, data []byte) error {
	w.buf = appendEvent(w.buf[:0], typ, id, data)
	return w.flush()
}

// AppendEvent appends the encoding of one event (type omitted when empty)
// to b, for callers that assemble a response before writing it. Data
// containing newlines is split into several data lines.
func AppendEvent(b []byte, typ string, data []byte) []byte { return appendEvent(b, typ, "", data) }

// AppendComment appends a comment (": text", or ":" when text is empty)
// and the blank line that ends it to b. Text containing newlines becomes
// several comment lines, so it can never start a field. A comment
// dispatches no event: readers see only that the stream is alive.
func AppendComment(b []byte, text string) []byte {
	for {
		b = append(b, ':')
		i := strings.IndexAny(text, "\r\n")
		line := text
		if i >= 0 {
			line = text[:i]
		}
		if line != "" {
			b = append(b, ' ')
			b = append(b, line...)
		}
		b = append(b, '\n')
		if i < 0 {
			break
		}
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
	return append(b, '\n')
}

func appendEvent(b []byte, typ, id string, data []byte) []byte {
	if typ != "" {
		b = append(b, "event: "...)
		b = append(b, typ...)
		b = append(b, '\n')
	}
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	for {
		i := bytes.IndexAny(data, "\r\n")
		b = append(b, "data: "...)
		if i < 0 {
			b = append(b, data...)
			b = append(b, '\n')
			break
		}
		b = append(b, data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(b, '\n')
}

func (w *Writer) flush() error {
	if _, err := w.w.Write(w.buf); err != nil {
		return err
	}
	switch f := w.w.(type) {
	case interface{ Flush() error }:
		return f.Flush()
	case interface{ Flush() }:
		f.Flush()
	}
	return nil
}
