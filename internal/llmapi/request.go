package llmapi

import (
	"net/url"
	"strings"
)

// RequestInfo is what the gateway needs to know about a request before it
// forwards it.
type RequestInfo struct {
	Provider Provider
	Endpoint Endpoint
	// Model is the body's "model", or for Gemini the model named in the path
	// and for Azure's dated API the deployment name when the body has none.
	Model string
	// Stream reports whether the response will be a stream, in Framing.
	Stream  bool
	Framing Framing
	// MaxOutputTokens is the requested output limit (max_tokens,
	// max_completion_tokens, max_output_tokens,
	// generationConfig.maxOutputTokens or options.num_predict); 0 when absent.
	MaxOutputTokens int64
	// InputEstimate is a cheap estimate of the input tokens: the bytes of the
	// text in the prompt-bearing members (messages, system, prompt, input,
	// instructions, contents, tools ...) divided by 4, not counting base64
	// images and other binary payloads. It is an estimate only, for pacing
	// and reservations; the response's usage is the truth.
	InputEstimate int64
	// IncludeUsage reports whether an OpenAI request set
	// stream_options.include_usage to true.
	IncludeUsage bool
	// UserID is Anthropic's metadata.user_id, an identity hint.
	UserID string
}

// InspectRequest reads what RequestInfo describes from a request's path,
// query and body, in one pass over the body without reflection. Paths it does
// not interpret (EndpointOther, EndpointModels) are never parsed and never
// fail, and an empty body is fine. A body that is not valid JSON, or not a
// JSON object where the endpoint needs one, gives an error matching
// ErrMalformedBody (a *SyntaxError with the offset).
//
// Streaming: Anthropic and OpenAI stream when "stream" is true (SSE); Gemini
// streams on :streamGenerateContent (SSE with alt=sse, else a JSON array);
// Ollama's native /api/chat and /api/generate stream (NDJSON) unless
// "stream" is false.
func InspectRequest(p Provider, path string, query url.Values, body []byte) (RequestInfo, error) {
	e := EndpointOf(path)
	info := RequestInfo{Provider: p, Endpoint: e}
	d := dialectOf(p, e)
	switch {
	case e == EndpointStreamGenerate:
		info.Stream = true
		info.Framing = FramingJSONArray
		if query.Get("alt") == "sse" {
			info.Framing = FramingSSE
		}
		info.Model = pathModel(path)
	case e == EndpointGenerate || strings.Contains(path, "models/") && strings.Contains(path, ":"):
		info.Model = pathModel(path)
	case strings.Contains(path, "/deployments/"):
		info.Model = deployment(path)
	}
	if e == EndpointOther || e == EndpointModels || len(body) == 0 {
		if d == dialectOllama && e != EndpointOther && e != EndpointModels {
			info.Stream, info.Framing = true, FramingNDJSON
		}
		return info, nil
	}

	s := newScanner(body)
	if s.peek() != '{' {
		s.skip()
		s.end()
		if s.err != nil {
			return info, s.err
		}
		return info, &SyntaxError{Offset: 0, Msg: "request body is not a JSON object"}
	}
	s.enterObject()
	var (
		stream, streamSet bool
		text              int64
	)
	for i := 0; s.member(i); i++ {
		switch string(s.key) {
		case "model":
			if m, ok := s.str(); ok && m != "" {
				info.Model = m
			}
		case "stream":
			stream, streamSet = s.boolean()
		case "stream_options":
			if s.enterObject() {
				for j := 0; s.member(j); j++ {
					if string(s.key) == "include_usage" {
						info.IncludeUsage, _ = s.boolean()
					} else {
						s.skip()
					}
				}
			}
		case "max_tokens", "max_completion_tokens", "max_output_tokens":
			info.MaxOutputTokens = maxLimit(info.MaxOutputTokens, &s)
		case "generationConfig", "generation_config":
			if s.enterObject() {
				for j := 0; s.member(j); j++ {
					switch string(s.key) {
					case "maxOutputTokens", "max_output_tokens":
						info.MaxOutputTokens = maxLimit(info.MaxOutputTokens, &s)
					default:
						s.skip()
					}
				}
			}
		case "options": // Ollama
			if s.enterObject() {
				for j := 0; s.member(j); j++ {
					if string(s.key) == "num_predict" {
						info.MaxOutputTokens = maxLimit(info.MaxOutputTokens, &s)
					} else {
						s.skip()
					}
				}
			}
		case "metadata":
			if s.enterObject() {
				for j := 0; s.member(j); j++ {
					if string(s.key) == "user_id" {
						info.UserID, _ = s.str()
					} else {
						s.skip()
					}
				}
			}
		case "messages", "system", "prompt", "input", "instructions", "contents",
			"systemInstruction", "system_instruction", "tools", "suffix":
			text += s.textLen()
		default:
			s.skip()
		}
	}
	s.end()
	if s.err != nil {
		return info, s.err
	}
	info.InputEstimate = (text + 3) / 4

	switch d {
	case dialectAnthropic, dialectChat, dialectResponses:
		if e != EndpointCountTokens && stream && streamSet {
			info.Stream, info.Framing = true, FramingSSE
		}
	case dialectOllama:
		if !streamSet || stream {
			info.Stream, info.Framing = true, FramingNDJSON
		}
	}
	return info, nil
}

// maxLimit reads a token limit and returns the larger of it and cur; a
// negative limit (Ollama's -1 "no limit") counts as absent.
func maxLimit(cur int64, s *scanner) int64 {
	if n, ok := s.int(); ok && n > cur {
		return n
	}
	return cur
}

// skipTextKey names members whose strings are not prompt or answer text:
// base64 payloads, opaque tokens, and protocol metadata (roles, ids,
// types, stop reasons). They are left out of the text estimates.
func skipTextKey(k []byte) bool {
	switch string(k) {
	case "data", "image_url", "images", "inlineData", "inline_data", "file_data",
		"signature", "encrypted_content", "input_audio", "media_type", "mimeType", "mime_type",
		"role", "type", "id", "index", "object", "status", "model",
		"finish_reason", "finishReason", "stop_reason", "stop_sequence",
		"call_id", "tool_call_id", "tool_use_id", "cache_control", "logprobs":
		return true
	}
	return false
}

// textLen sums the raw length of every string inside the next value, except
// under skipTextKey members.
func (s *scanner) textLen() int64 {
	var n int64
	switch s.peek() {
	case '"':
		return s.strLen()
	case '{':
		if s.enterObject() {
			for i := 0; s.member(i); i++ {
				if skipTextKey(s.key) {
					s.skip()
				} else {
					n += s.textLen()
				}
			}
		}
	case '[':
		if s.enterArray() {
			for i := 0; s.elem(i); i++ {
				n += s.textLen()
			}
		}
	default:
		s.skip()
	}
	return n
}

// pathModel returns the model in a Gemini path: the last segment up to ':'
// (".../models/gemini-2.5-pro:generateContent" → "gemini-2.5-pro").
func pathModel(path string) string {
	last := path[strings.LastIndexByte(path, '/')+1:]
	m, _, _ := strings.Cut(last, ":")
	return m
}

// deployment returns the Azure deployment in /openai/deployments/{d}/...
func deployment(path string) string {
	_, rest, _ := strings.Cut(path, "/deployments/")
	d, _, _ := strings.Cut(rest, "/")
	return d
}

const includeUsageMember = `"stream_options":{"include_usage":true}`

// InjectIncludeUsage returns an OpenAI chat (or completions) request body
// with stream_options.include_usage set to true, so that a stream ends with a
// usage chunk. Every other byte is kept: members, their order, unknown fields
// and whitespace. A stream_options that is not an object is replaced by
// {"include_usage":true}. When the flag is already true the body is returned
// as is; otherwise the result is a new slice and body is not modified. A body
// that is not a JSON object gives an error matching ErrMalformedBody.
func InjectIncludeUsage(body []byte) ([]byte, error) {
	s := newScanner(body)
	if s.peek() != '{' {
		s.skip()
		s.end()
		if s.err != nil {
			return nil, s.err
		}
		return nil, &SyntaxError{Offset: 0, Msg: "request body is not a JSON object"}
	}
	open := s.pos
	s.enterObject()
	optStart, optEnd, lastEnd := -1, -1, -1
	for i := 0; s.member(i); i++ {
		if string(s.key) == "stream_options" {
			s.peek()
			optStart = s.pos
			s.skip()
			optEnd = s.pos
		} else {
			s.skip()
		}
		lastEnd = s.pos
	}
	s.end()
	if s.err != nil {
		return nil, s.err
	}
	switch {
	case optStart < 0 && lastEnd < 0: // {}
		return splice(body, open+1, open+1, includeUsageMember), nil
	case optStart < 0:
		return splice(body, lastEnd, lastEnd, ","+includeUsageMember), nil
	case body[optStart] != '{':
		return splice(body, optStart, optEnd, `{"include_usage":true}`), nil
	}
	// stream_options is an object: set or add include_usage inside it.
	sub := newScanner(body[:optEnd])
	sub.pos = optStart
	sub.enterObject()
	valStart, valEnd, members := -1, -1, 0
	for ; sub.member(members); members++ {
		if string(sub.key) == "include_usage" {
			sub.peek()
			valStart = sub.pos
			sub.skip()
			valEnd = sub.pos
		} else {
			sub.skip()
		}
	}
	switch {
	case valStart >= 0 && string(body[valStart:valEnd]) == "true":
		return body, nil
	case valStart >= 0:
		return splice(body, valStart, valEnd, "true"), nil
	case members == 0:
		return splice(body, optStart+1, optStart+1, `"include_usage":true`), nil
	}
	return splice(body, optStart+1, optStart+1, `"include_usage":true,`), nil
}

// splice returns a new slice: b with b[i:j] replaced by ins.
func splice(b []byte, i, j int, ins string) []byte {
	out := make([]byte, 0, len(b)-(j-i)+len(ins))
	out = append(out, b[:i]...)
	out = append(out, ins...)
	return append(out, b[j:]...)
}
