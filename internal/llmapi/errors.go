package llmapi

import (
	"strconv"
	"unicode/utf8"

	"github.com/apiary-dev/apiary/internal/sse"
)

// Error kinds for ErrorBody and StreamErrorFrame, in Anthropic's vocabulary;
// each provider's shape maps them to its own types, codes and statuses. Any
// other string is passed through as the error type.
const (
	KindInvalidRequest  = "invalid_request_error"
	KindAuthentication  = "authentication_error"
	KindPermission      = "permission_error"
	KindNotFound        = "not_found_error"
	KindRequestTooLarge = "request_too_large"
	KindRateLimit       = "rate_limit_error"
	KindBilling         = "billing_error"
	KindAPI             = "api_error"
	KindOverloaded      = "overloaded_error"
	KindTimeout         = "timeout_error"
)

type kindInfo struct {
	status     int    // default HTTP status
	openaiType string // OpenAI error.type
	openaiCode string // OpenAI error.code; "" is null
	respCode   string // Responses response.error.code
	gemini     string // Gemini error.status
}

func kindOfError(kind string) kindInfo {
	switch kind {
	case KindInvalidRequest:
		return kindInfo{400, "invalid_request_error", "", "invalid_prompt", "INVALID_ARGUMENT"}
	case KindAuthentication:
		return kindInfo{401, "invalid_request_error", "invalid_api_key", "server_error", "UNAUTHENTICATED"}
	case KindPermission:
		return kindInfo{403, "invalid_request_error", "permission_denied", "server_error", "PERMISSION_DENIED"}
	case KindNotFound:
		return kindInfo{404, "invalid_request_error", "not_found", "server_error", "NOT_FOUND"}
	case KindRequestTooLarge:
		return kindInfo{413, "invalid_request_error", "request_too_large", "invalid_prompt", "INVALID_ARGUMENT"}
	case KindRateLimit:
		return kindInfo{429, "requests", "rate_limit_exceeded", "rate_limit_exceeded", "RESOURCE_EXHAUSTED"}
	case KindBilling:
		return kindInfo{402, "insufficient_quota", "insufficient_quota", "server_error", "RESOURCE_EXHAUSTED"}
	case KindOverloaded:
		return kindInfo{529, "server_error", "", "server_error", "UNAVAILABLE"}
	case KindTimeout:
		return kindInfo{504, "server_error", "", "server_error", "DEADLINE_EXCEEDED"}
	case KindAPI:
		return kindInfo{500, "server_error", "", "server_error", "INTERNAL"}
	}
	return kindInfo{500, kind, "", "server_error", "UNKNOWN"}
}

// StatusOf returns the HTTP status a provider uses for an error kind
// (KindRateLimit → 429, KindOverloaded → 529, KindBilling → 402, an unknown
// kind → 500). For OpenAI-shaped answers prefer 503 over 529.
func StatusOf(kind string) int { return kindOfError(kind).status }

// geminiStatus names a Gemini (google.rpc) status for an HTTP status.
func geminiStatus(status int, kind string) string {
	if ki := kindOfError(kind); ki.gemini != "UNKNOWN" {
		return ki.gemini
	}
	switch status {
	case 400, 413:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 500:
		return "INTERNAL"
	case 503, 529:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return "UNKNOWN"
}

// ErrorBody returns an error response body in the provider's shape, for
// the gateway to answer a client itself (with Content-Type
// application/json and the given status):
//
//	Anthropic  {"type":"error","error":{"type":kind,"message":…}}
//	OpenAI, Azure, OpenAI-compatible
//	           {"error":{"message":…,"type":…,"param":null,"code":…}}
//	Gemini     {"error":{"code":status,"message":…,"status":"RESOURCE_EXHAUSTED"}}
//	Ollama     {"error":"…"}
//
// Clients of Ollama's OpenAI-compatible /v1 paths expect the OpenAI shape:
// pass OpenAICompatible for them. A zero status uses StatusOf(kind).
func ErrorBody(p Provider, status int, kind, message string) []byte {
	if status == 0 {
		status = StatusOf(kind)
	}
	b := make([]byte, 0, 96+len(message))
	switch p {
	case Anthropic:
		b = appendAnthropicError(b, kind, message)
	case Gemini:
		b = appendGeminiError(b, status, kind, message)
	case Ollama:
		b = append(b, `{"error":`...)
		b = appendString(b, message)
		b = append(b, '}')
	default:
		b = appendOpenAIError(b, kind, message)
	}
	return b
}

// StreamErrorFrame returns exactly one well-formed terminal frame that ends
// a stream already under way, in the client's protocol (decided by the
// endpoint, then the provider):
//
//	Anthropic        event: error + data: {"type":"error","error":{…}}
//	OpenAI chat      data: {"error":{…}} then data: [DONE]
//	Responses        event: response.failed + a response whose status is
//	                 "failed" and whose error says why
//	Gemini (SSE)     data: {"error":{…}}
//	Ollama (NDJSON)  {"error":"…"} and a newline
//
// A Gemini stream without alt=sse is a JSON array that cannot in general be
// ended well-formed mid-way; this function does not cover it.
func StreamErrorFrame(p Provider, e Endpoint, kind, message string) []byte {
	b := make([]byte, 0, 160+len(message))
	switch dialectOf(p, e) {
	case dialectAnthropic:
		b = sse.AppendEvent(b, "error", appendAnthropicError(nil, kind, message))
	case dialectResponses:
		var r []byte
		r = append(r, `{"type":"response.failed","sequence_number":0,"response":{"id":"","object":"response","created_at":0,"status":"failed","error":{"code":`...)
		r = appendString(r, kindOfError(kind).respCode)
		r = append(r, `,"message":`...)
		r = appendString(r, message)
		r = append(r, `},"incomplete_details":null,"output":[],"usage":null}}`...)
		b = sse.AppendEvent(b, "response.failed", r)
	case dialectGemini:
		b = sse.AppendEvent(b, "", appendGeminiError(nil, StatusOf(kind), kind, message))
	case dialectOllama:
		b = append(b, `{"error":`...)
		b = appendString(b, message)
		b = append(b, "}\n"...)
	default:
		b = sse.AppendEvent(b, "", appendOpenAIError(nil, kind, message))
		b = sse.AppendEvent(b, "", []byte("[DONE]"))
	}
	return b
}

func appendAnthropicError(b []byte, kind, message string) []byte {
	b = append(b, `{"type":"error","error":{"type":`...)
	b = appendString(b, kind)
	b = append(b, `,"message":`...)
	b = appendString(b, message)
	return append(b, "}}"...)
}

func appendOpenAIError(b []byte, kind, message string) []byte {
	ki := kindOfError(kind)
	b = append(b, `{"error":{"message":`...)
	b = appendString(b, message)
	b = append(b, `,"type":`...)
	b = appendString(b, ki.openaiType)
	b = append(b, `,"param":null,"code":`...)
	if ki.openaiCode == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, ki.openaiCode)
	}
	return append(b, "}}"...)
}

func appendGeminiError(b []byte, status int, kind, message string) []byte {
	b = append(b, `{"error":{"code":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"message":`...)
	b = appendString(b, message)
	b = append(b, `,"status":`...)
	b = appendString(b, geminiStatus(status, kind))
	return append(b, "}}"...)
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// U+2028 and U+2029 are escaped so the output is also valid JavaScript.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
