package sse

import (
	"errors"
	"io"
)

// Reader reads events from an io.Reader.
type Reader struct {
	r       io.Reader
	p       Parser
	buf     []byte
	queue   []Event
	err     error
	emitter func(Event)
}

// NewReader returns a Reader that parses r.
func NewReader(r io.Reader) *Reader {
	rd := &Reader{r: r, buf: make([]byte, 32<<10)}
	rd.emitter = func(ev Event) { rd.queue = append(rd.queue, ev) }
	return rd
}

// Next returns the next event. At a clean end of stream it returns io.EOF; if
// the stream ended inside an event it returns io.ErrUnexpectedEOF (the partial
// event is discarded, as the standard requires).
func (r *Reader) Next() (Event, error) {
	for len(r.queue) == 0 {
		if r.err != nil {
			return Event{}, r.err
		}
		n, err := r.r.Read(r.buf)
		if n > 0 {
			if perr := r.p.Feed(r.buf[:n], r.emitter); perr != nil {
				r.err = perr
				continue
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if r.p.Pending() {
					err = io.ErrUnexpectedEOF
				} else {
					err = io.EOF
				}
			}
			r.err = err
		}
	}
	ev := r.queue[0]
	r.queue = r.queue[1:]
	return ev, nil
}
