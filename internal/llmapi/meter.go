package llmapi

import (
	"bytes"

	"github.com/apiary-dev/apiary/internal/sse"
)

// Outcome is how a response stream ended.
type Outcome uint8

// Outcomes. The zero value is OutcomeTruncated, so a result that was never
// filled in is never mistaken for a clean end.
const (
	// OutcomeTruncated: the stream ended (or the reader gave up) before the
	// provider's terminal frame.
	OutcomeTruncated Outcome = iota
	// OutcomeComplete: the provider's terminal frame arrived.
	OutcomeComplete
	// OutcomeErrored: the provider reported an error inside the stream.
	OutcomeErrored
)

// String returns "truncated", "complete" or "errored".
func (o Outcome) String() string {
	switch o {
	case OutcomeComplete:
		return "complete"
	case OutcomeErrored:
		return "errored"
	}
	return "truncated"
}

// StreamResult is what a StreamMeter learned from a response.
type StreamResult struct {
	Outcome Outcome
	// Usage is the provider's final usage; when that never arrived, the
	// counts seen so far completed by estimates (input from the request's
	// InputEstimate, output from the streamed text bytes / 4), with
	// Usage.Estimated set.
	Usage Usage
	// Model is the model the response names, if any.
	Model string
	// Events counts SSE events, NDJSON lines or JSON array elements (1 for
	// a JSON body).
	Events int
	// ErrorType and ErrorMessage describe an in-stream error (Outcome
	// OutcomeErrored): the provider's error type, status or code, and its
	// message.
	ErrorType    string
	ErrorMessage string
	// Err is set when the framing itself broke (a frame over the size
	// limit, bytes that are not the expected framing) and metering stopped
	// early; the other fields describe the stream up to that point.
	Err error
}

// maxJSONBody bounds the bytes of a non-streaming body a meter keeps whole;
// past it only the last tailJSON bytes are kept and the usage is looked for
// there (every provider puts it at the end).
const (
	maxJSONBody = 256 << 10
	tailJSON    = 64 << 10
)

// StreamMeter watches a response body as the gateway forwards it, without
// copying it or holding it back: Feed it every chunk read from upstream,
// then call Finish once. It parses events as they complete (whatever the
// read boundaries are), tracks usage (keeping the latest value of each
// counter: Anthropic message_delta and Gemini usageMetadata are cumulative),
// the provider's terminal frame, in-stream errors and the number of events.
// Unknown events and fields are ignored; malformed events are skipped.
// It is not safe for concurrent use.
//
// Terminal frames: Anthropic message_stop; OpenAI chat data: [DONE];
// Responses response.completed, response.incomplete or response.failed;
// Ollama a line with "done": true; Gemini a chunk with a finishReason and
// then the clean end of the body (and, for a JSON array, its closing ']').
type StreamMeter struct {
	d             dialect
	framing       Framing
	inputEstimate int64

	sse     sse.Parser
	lines   LineSplitter
	arr     ArraySplitter
	body    []byte // FramingJSON: the body, or its tail once over maxJSONBody
	bodyLen int64

	onEvent func(sse.Event)
	onChunk func([]byte)
	scratch []byte

	raw        rawUsage
	final      bool // the provider's final usage arrived
	deltaUsage bool // Anthropic: a message_delta carried usage
	terminal   bool
	finishSeen bool // Gemini: a candidate had a finishReason
	errored    bool
	errType    string
	errMessage string
	model      string
	events     int
	outBytes   int64
	err        error
}

// NewStreamMeter returns a meter for the response to the request info
// describes: its Provider, Endpoint, Framing and InputEstimate are used.
func NewStreamMeter(info RequestInfo) *StreamMeter {
	m := &StreamMeter{
		d:             dialectOf(info.Provider, info.Endpoint),
		framing:       info.Framing,
		inputEstimate: info.InputEstimate,
	}
	m.onEvent = m.event
	m.onChunk = m.line
	return m
}

// Feed meters the next bytes of the body. It never fails: a framing error
// stops metering and is reported by Finish.
func (m *StreamMeter) Feed(p []byte) {
	if m.err != nil {
		return
	}
	var err error
	switch m.framing {
	case FramingSSE:
		err = m.sse.Feed(p, m.onEvent)
	case FramingNDJSON:
		err = m.lines.Feed(p, m.onChunk)
	case FramingJSONArray:
		err = m.arr.Feed(p, m.onChunk)
	default:
		m.bodyLen += int64(len(p))
		m.body = append(m.body, p...)
		if m.bodyLen > maxJSONBody && len(m.body) > 2*tailJSON {
			n := copy(m.body, m.body[len(m.body)-tailJSON:])
			m.body = m.body[:n]
		}
	}
	m.err = err
}

// FeedEvent meters one whole event whose framing the caller has already
// taken off: the JSON of one event, as one Responses WebSocket text message
// carries what an SSE event's data would. It reports whether the response
// is over, by its terminal event or an in-stream error; call Finish then,
// and meter the next response with a new StreamMeter. A meter is fed either
// with Feed or with FeedEvent, not both. data is not kept.
func (m *StreamMeter) FeedEvent(data []byte) (end bool) {
	m.events++
	m.handle("", data)
	return m.terminal || m.errored
}

// event handles one SSE event.
func (m *StreamMeter) event(ev sse.Event) {
	m.events++
	m.scratch = append(m.scratch[:0], ev.Data...)
	m.handle(ev.Type, m.scratch)
}

// line handles one NDJSON line or JSON array element.
func (m *StreamMeter) line(b []byte) {
	m.events++
	m.handle("", b)
}

func (m *StreamMeter) handle(evType string, data []byte) {
	if m.d == dialectChat || m.d == dialectEmbeddings {
		if string(bytes.TrimSpace(data)) == "[DONE]" {
			m.terminal = true
			return
		}
	}
	var c chunk
	model, err := parseChunk(data, &m.raw, &c, m.model == "")
	if model != "" {
		m.model = model
	}
	if err != nil {
		return // a malformed event is skipped; what it set before the error stays
	}
	m.outBytes += c.outBytes
	kind := kindOf(evType)
	if len(c.typ) > 0 {
		kind = kindOf(c.typ) // the data's own type names the event most precisely
	}
	switch m.d {
	case dialectAnthropic:
		switch kind {
		case evMessageDelta:
			m.deltaUsage = m.deltaUsage || c.usage
		case evMessageStop:
			// The last message_delta before message_stop holds the final
			// (cumulative) usage; one followed by a cut may not.
			m.terminal = true
			m.final = m.deltaUsage
		case evError:
			m.fail(firstNonEmpty(c.errType, "error"), c.errMessage)
		}
	case dialectResponses:
		switch kind {
		case evResponseDone:
			m.terminal = true
			m.final = m.final || c.respUsage
		case evResponseFailed:
			m.terminal = true
			m.final = m.final || c.respUsage
			m.fail(firstNonEmpty(c.errType, "response.failed"), c.errMessage)
		case evError:
			m.fail(firstNonEmpty(c.topCode, c.errType, "error"), firstNonEmpty(c.topMessage, c.errMessage))
		}
	case dialectGemini:
		m.finishSeen = m.finishSeen || c.finish
		m.final = m.final || (c.usage && m.finishSeen)
	case dialectOllama:
		if c.done {
			m.terminal, m.final = true, true
		}
	default: // OpenAI chat and completions
		m.final = m.final || c.usage
	}
	if c.hasErr {
		m.fail(c.errType, c.errMessage)
	}
}

// evKind is an event type that changes a meter's state.
type evKind uint8

const (
	evOther evKind = iota
	evMessageDelta
	evMessageStop
	evResponseDone
	evResponseFailed
	evError
)

// kindOf maps an event type (an SSE event field or a data "type" member)
// to its kind, without allocating.
func kindOf[T string | []byte](t T) evKind {
	switch string(t) {
	case "message_delta":
		return evMessageDelta
	case "message_stop":
		return evMessageStop
	case "response.completed", "response.incomplete":
		return evResponseDone
	case "response.failed":
		return evResponseFailed
	case "error":
		return evError
	}
	return evOther
}

func (m *StreamMeter) fail(typ, msg string) {
	if typ == "" && msg == "" {
		typ = "error"
	}
	if !m.errored {
		m.errored, m.errType, m.errMessage = true, typ, msg
	}
}

// Finish ends metering and returns the result; call it once, after the last
// Feed. eof reports whether the body
// ended cleanly (io.EOF) rather than with a read error or a cancellation.
// A stream whose terminal frame arrived is complete whatever eof says.
func (m *StreamMeter) Finish(eof bool) StreamResult {
	pending := false
	switch m.framing {
	case FramingSSE:
		pending = m.sse.Pending()
	case FramingNDJSON:
		if eof && m.err == nil {
			m.err = m.lines.Flush(m.onChunk)
		}
	case FramingJSONArray:
		pending = !m.arr.Closed()
	default:
		m.finishJSON(eof)
	}
	res := StreamResult{Model: m.model, Events: m.events, Err: m.err}
	switch {
	case m.errored:
		res.Outcome = OutcomeErrored
		res.ErrorType, res.ErrorMessage = m.errType, m.errMessage
	case m.d == dialectGemini && m.framing != FramingJSON:
		if m.finishSeen && eof && !pending && m.err == nil {
			res.Outcome = OutcomeComplete
		}
	case m.terminal:
		res.Outcome = OutcomeComplete
	}
	u := m.raw.usage()
	if !m.final {
		u.Estimated = true
		if !m.raw.hasInput() {
			u.InputTokens = m.inputEstimate
		}
		u.OutputTokens = max(u.OutputTokens, (m.outBytes+3)/4)
	}
	res.Usage = u
	return res
}

// finishJSON meters a whole non-streaming body.
func (m *StreamMeter) finishJSON(eof bool) {
	m.events = 1
	if m.bodyLen <= maxJSONBody {
		var c chunk
		m.model, _ = parseChunk(m.body, &m.raw, &c, true)
		s := newScanner(m.body)
		s.skip()
		s.end()
		switch {
		case c.hasErr:
			m.fail(c.errType, c.errMessage)
		case s.err == nil && eof:
			m.terminal = true
		}
		m.final = m.raw.set != 0
		return
	}
	// Over the limit: find the last usage member in the tail and read the
	// members from there to the end of the top-level object.
	best := -1
	for _, key := range []string{`"usage"`, `"usageMetadata"`, `"prompt_eval_count"`} {
		if i := lastKey(m.body, key); i > best {
			best = i
		}
	}
	if best >= 0 {
		s := newScanner(m.body)
		s.pos = best
		for i := 0; s.member(i); i++ {
			switch string(s.key) {
			case "usage":
				m.raw.parseUsage(&s)
			case "usageMetadata":
				m.raw.parseGemini(&s)
			case "prompt_eval_count":
				m.raw.putInt(&s, slotOllamaPrompt)
			case "eval_count":
				m.raw.putInt(&s, slotOllamaEval)
			default:
				s.skip()
			}
		}
	}
	m.final = m.raw.set != 0
	m.terminal = eof
}

// lastKey returns the offset of the last occurrence of key (a quoted name)
// followed by optional whitespace and ':', or -1.
func lastKey(b []byte, key string) int {
	for end := len(b); ; {
		i := bytes.LastIndex(b[:end], []byte(key))
		if i < 0 {
			return -1
		}
		j := i + len(key)
		for j < len(b) && isSpace(b[j]) {
			j++
		}
		if j < len(b) && b[j] == ':' {
			return i
		}
		end = i
	}
}

// IsUsageOnlyChunk reports whether an OpenAI chat stream event's data is the
// usage chunk that stream_options.include_usage adds before [DONE]: an empty
// choices array and a non-null usage object. Azure's first chunk, whose
// choices are empty but whose usage is null, is not.
func IsUsageOnlyChunk(data []byte) bool {
	s := newScanner(data)
	if !s.enterObject() {
		return false
	}
	choices, usage := -1, false
	for i := 0; s.member(i); i++ {
		switch string(s.key) {
		case "choices":
			if s.enterArray() {
				choices = 0
				for ; s.elem(choices); choices++ {
					s.skip()
				}
			}
		case "usage":
			usage = s.peek() == '{'
			s.skip()
		default:
			s.skip()
		}
	}
	s.end()
	return s.err == nil && choices == 0 && usage
}
