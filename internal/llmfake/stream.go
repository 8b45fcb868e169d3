package llmfake

import (
	"net/http"
	"strconv"

	"github.com/apiary-dev/apiary/internal/sse"
)

// framing is how a stream's events are put on the wire.
type framing int

const (
	frameSSE    framing = iota // event: and data: lines (Anthropic, Responses)
	frameData                  // data: lines only (Chat Completions, Gemini alt=sse)
	frameNDJSON                // one JSON object per line (Ollama)
	frameArray                 // one JSON array delivered incrementally (Gemini)
)

const (
	ctJSON   = "application/json"
	ctSSE    = "text/event-stream; charset=utf-8"
	ctNDJSON = "application/x-ndjson"
)

// event is one stream event; typ is used by frameSSE only.
type event struct {
	typ  string
	data []byte
}

func (x *exchange) flush() {
	if f, ok := x.w.(http.Flusher); ok {
		f.Flush()
	}
}

// sendBody writes a complete 200 body, applying the slow first byte and a
// cut (half the body, then the connection closes).
func (x *exchange) sendBody(ct string, body []byte, p *plan) {
	h := x.w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	x.status = http.StatusOK
	if p.slow > 0 || p.stream == 1 {
		x.w.WriteHeader(http.StatusOK)
		x.flush()
		if !x.sleep(p.slow) {
			x.outcome = outGone
			return
		}
	}
	if p.stream == 1 {
		x.w.Write(body[:len(body)/2])
		x.flush()
		x.outcome = outCut
		x.finish()
		panic(http.ErrAbortHandler) // the server closes the connection
	}
	x.w.Write(body)
}

// sendStream writes a 200 stream. A cut closes the connection after K
// events; an in-stream error sends errEv after K events and ends the stream.
func (x *exchange) sendStream(ct string, f framing, evs []event, errEv event, p *plan) {
	x.sendStreamFn(ct, f, evs, func(int) event { return errEv }, p)
}

// sendStreamFn is sendStream with an error event that depends on K.
func (x *exchange) sendStreamFn(ct string, f framing, evs []event, errEv func(k int) event, p *plan) {
	h := x.w.Header()
	h.Set("Content-Type", ct)
	h.Set("Cache-Control", "no-cache")
	x.status = http.StatusOK
	x.w.WriteHeader(http.StatusOK)
	x.flush()
	if !x.sleep(p.slow) {
		x.outcome = outGone
		return
	}
	k := len(evs)
	if p.stream != 0 && len(evs) > 1 {
		k = x.cfg.Faults.AfterEvents
		if k == 0 {
			k = 1 + int(p.after*float64(len(evs)-1))
		}
		k = min(max(k, 1), len(evs)-1)
	}
	sw := sse.NewWriter(x.w)
	write := func(i int, ev event) error {
		switch f {
		case frameSSE:
			return sw.Event(ev.typ, ev.data)
		case frameData:
			return sw.Event("", ev.data)
		case frameNDJSON:
			_, err := x.w.Write(append(ev.data, '\n'))
			x.flush()
			return err
		default:
			sep := ",\r\n"
			if i == 0 {
				sep = "["
			}
			_, err := x.w.Write(append([]byte(sep), ev.data...))
			x.flush()
			return err
		}
	}
	delay := x.cfg.scale(x.cfg.Faults.EventDelay)
	for i, ev := range evs {
		if i == k {
			if p.stream == 1 {
				x.outcome = outCut
				x.finish()
				panic(http.ErrAbortHandler)
			}
			x.outcome = outStreamError
			if write(i, errEv(k)) == nil && f == frameArray {
				x.w.Write([]byte("]"))
			}
			return
		}
		if i > 0 && delay > 0 && !x.sleep(delay) {
			x.outcome = outGone
			return
		}
		if write(i, ev) != nil {
			x.outcome = outGone
			return
		}
	}
	if f == frameArray {
		x.w.Write([]byte("]"))
	}
}
