package llmapi

import "strconv"

// chunk is what one stream event (an SSE data payload, an NDJSON line, a
// JSON array element) or one whole JSON body says, read in a single pass.
// Usage counters go straight into the meter's rawUsage.
type chunk struct {
	typ        []byte // the "type" member, raw (event types are plain ASCII)
	usage      bool   // a non-null usage object (or usageMetadata / Ollama counts)
	respUsage  bool   // a usage object under "response" (Responses terminal events)
	finish     bool   // Gemini candidates[].finishReason
	done       bool   // Ollama "done": true
	choices    int    // number of choices; -1 when there is no choices array
	hasErr     bool
	errType    string
	errMessage string
	topCode    string // top-level "code" (Responses error event)
	topMessage string // top-level "message" when a string (Responses error event)
	outBytes   int64
}

// parseChunk reads one JSON object into c and r. wantModel asks for the
// model name (once per stream, to save an allocation per event).
func parseChunk(data []byte, r *rawUsage, c *chunk, wantModel bool) (model string, err *SyntaxError) {
	c.choices = -1
	s := newScanner(data)
	if !s.enterObject() {
		s.end()
		return "", s.err
	}
	for i := 0; s.member(i); i++ {
		switch string(s.key) {
		case "type":
			if s.peek() == '"' {
				c.typ, _ = s.rawString()
			} else {
				s.skip()
			}
		case "usage":
			if s.peek() == '{' {
				c.usage = true
			}
			r.parseUsage(&s)
		case "usageMetadata", "usage_metadata":
			if s.peek() == '{' {
				c.usage = true
			}
			r.parseGemini(&s)
		case "prompt_eval_count":
			c.usage = true
			r.putInt(&s, slotOllamaPrompt)
		case "eval_count":
			c.usage = true
			r.putInt(&s, slotOllamaEval)
		case "message":
			switch s.peek() {
			case '{': // Anthropic message_start, Ollama chat
				model = c.message(&s, r, wantModel, model)
			case '"': // Responses error event
				c.topMessage, _ = s.str()
			default:
				s.skip()
			}
		case "response":
			switch s.peek() {
			case '{': // Responses lifecycle events
				model = c.response(&s, r, wantModel, model)
			default: // Ollama generate text
				c.outBytes += s.strLen()
			}
		case "delta":
			c.outBytes += s.textLen()
		case "choices":
			c.choices = 0
			if s.enterArray() {
				for ; s.elem(c.choices); c.choices++ {
					c.outBytes += s.textLen()
				}
			}
		case "candidates":
			if s.enterArray() {
				for j := 0; s.elem(j); j++ {
					c.candidate(&s)
				}
			}
		case "error":
			c.parseError(&s)
		case "code":
			c.topCode = scalarText(&s)
		case "done":
			c.done, _ = s.boolean()
		case "model", "modelVersion":
			if wantModel && model == "" {
				model, _ = s.str()
			} else {
				s.skip()
			}
		default:
			s.skip()
		}
	}
	s.end()
	return model, s.err
}

// message reads an Anthropic message (message_start) or an Ollama chat
// message.
func (c *chunk) message(s *scanner, r *rawUsage, wantModel bool, model string) string {
	s.enterObject()
	for i := 0; s.member(i); i++ {
		switch string(s.key) {
		case "usage":
			r.parseUsage(s)
		case "model":
			if wantModel && model == "" {
				model, _ = s.str()
			} else {
				s.skip()
			}
		case "content", "thinking", "tool_calls":
			c.outBytes += s.textLen()
		default:
			s.skip()
		}
	}
	return model
}

// response reads the response object of a Responses lifecycle event.
func (c *chunk) response(s *scanner, r *rawUsage, wantModel bool, model string) string {
	s.enterObject()
	for i := 0; s.member(i); i++ {
		switch string(s.key) {
		case "usage":
			if s.peek() == '{' {
				c.respUsage = true
			}
			r.parseUsage(s)
		case "error":
			c.parseError(s)
		case "model":
			if wantModel && model == "" {
				model, _ = s.str()
			} else {
				s.skip()
			}
		default:
			s.skip()
		}
	}
	return model
}

// candidate reads one Gemini candidate: its text and finishReason.
func (c *chunk) candidate(s *scanner) {
	if !s.enterObject() {
		return
	}
	for i := 0; s.member(i); i++ {
		switch string(s.key) {
		case "content":
			c.outBytes += s.textLen()
		case "finishReason", "finish_reason":
			if v, ok := s.str(); ok && v != "" {
				c.finish = true
			}
		default:
			s.skip()
		}
	}
}

// parseError reads an "error" member: an object (Anthropic, OpenAI, Gemini,
// Responses) or a string (Ollama). null is not an error.
func (c *chunk) parseError(s *scanner) {
	switch s.peek() {
	case '"':
		c.hasErr = true
		c.errMessage, _ = s.str()
		return
	case '{':
	default:
		s.skip()
		return
	}
	c.hasErr = true
	var typ, status, code string
	s.enterObject()
	for i := 0; s.member(i); i++ {
		switch string(s.key) {
		case "type":
			typ, _ = s.str()
		case "status":
			status, _ = s.str()
		case "code":
			code = scalarText(s)
		case "message":
			c.errMessage, _ = s.str()
		default:
			s.skip()
		}
	}
	c.errType = firstNonEmpty(typ, status, code)
}

// scalarText reads a string or number as text; other values give "".
func scalarText(s *scanner) string {
	switch c := s.peek(); {
	case c == '"':
		v, _ := s.str()
		return v
	case c == '-' || c >= '0' && c <= '9':
		n, _ := s.int()
		return strconv.FormatInt(n, 10)
	}
	s.skip()
	return ""
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}
