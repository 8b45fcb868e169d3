package llmfake

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// dialect is a provider's wire format.
type dialect int

const (
	dAnthropic dialect = iota
	dOpenAI
	dGemini
	dOllama
)

func (d dialect) String() string {
	switch d {
	case dAnthropic:
		return "anthropic"
	case dOpenAI:
		return "openai"
	case dGemini:
		return "gemini"
	default:
		return "ollama"
	}
}

// failure is an error answer before any body was written.
type failure struct {
	status int
	msg    string
	// For 429s: the exhausted dimension, its limit and the wait.
	dim   dim
	limit int64
	wait  time.Duration
	model string
}

// errorBody renders f in the dialect's own error shape; reqID goes where
// the provider puts it.
func errorBody(d dialect, f *failure, reqID string) []byte {
	var v any
	switch d {
	case dAnthropic:
		v = struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
			RequestID string `json:"request_id"`
		}{Type: "error", Error: struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}{anthropicErrorType(f.status), f.msg}, RequestID: reqID}
	case dOpenAI:
		e := map[string]any{"message": f.msg, "type": openAIErrorType(f.status), "param": nil, "code": nil}
		switch f.status {
		case http.StatusTooManyRequests:
			e["code"] = "rate_limit_exceeded"
			if f.dim == dimRequests {
				e["type"] = "requests"
			} else {
				e["type"] = "tokens"
			}
		case http.StatusUnauthorized:
			e["code"] = "invalid_api_key"
		case http.StatusBadGateway:
			e["code"] = 502
		}
		v = map[string]any{"error": e}
	case dGemini:
		e := map[string]any{"code": f.status, "message": f.msg, "status": geminiStatus(f.status)}
		if f.status == http.StatusTooManyRequests {
			e["details"] = []any{
				map[string]any{
					"@type": "type.googleapis.com/google.rpc.QuotaFailure",
					"violations": []any{map[string]any{
						"quotaMetric":     "generativelanguage.googleapis.com/generate_content_" + geminiMetric(f.dim),
						"quotaId":         "Generate" + geminiQuotaID(f.dim) + "PerMinutePerProjectPerModel",
						"quotaDimensions": map[string]any{"location": "global", "model": f.model},
						"quotaValue":      strconv.FormatInt(f.limit, 10),
					}},
				},
				map[string]any{
					"@type": "type.googleapis.com/google.rpc.Help",
					"links": []any{map[string]any{"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}},
				},
				map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": protoDuration(f.wait)},
			}
		}
		v = map[string]any{"error": e}
	default:
		v = map[string]any{"error": f.msg}
	}
	b, _ := json.Marshal(v)
	return b
}

func anthropicErrorType(status int) string {
	switch status {
	case 400, 405:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529, 503:
		return "overloaded_error"
	case 504:
		return "timeout_error"
	default:
		return "api_error"
	}
}

func openAIErrorType(status int) string {
	switch {
	case status < 500:
		return "invalid_request_error"
	case status == http.StatusBadGateway:
		return "cf_bad_gateway"
	default:
		return "server_error"
	}
}

func geminiStatus(status int) string {
	switch status {
	case 400, 413:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 405:
		return "UNIMPLEMENTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 502, 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	default:
		return "INTERNAL"
	}
}

func geminiMetric(d dim) string {
	switch d {
	case dimRequests:
		return "requests"
	case dimInput:
		return "input_token_count"
	default:
		return "token_count"
	}
}

func geminiQuotaID(d dim) string {
	if d == dimRequests {
		return "Requests"
	}
	return "InputTokens"
}

// protoDuration formats d like google.protobuf.Duration's JSON: "46s",
// "1.5s".
func protoDuration(d time.Duration) string {
	s := strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "s"
}

// defaultMessage is the provider-style message for an injected or capacity
// failure.
func defaultMessage(d dialect, status int) string {
	switch {
	case status == 529 || (status == 503 && d == dAnthropic):
		return "Overloaded"
	case status == 503 && d == dOllama:
		return "server busy, please try again.  maximum pending requests exceeded"
	case status == 503 && d == dGemini:
		return "The model is overloaded. Please try again later."
	case status == 503:
		return "The server is overloaded or not ready yet."
	case status == 502:
		return "Bad gateway."
	case status == 504:
		return "Gateway timeout."
	case d == dOpenAI:
		return "The server had an error while processing your request. Sorry about that!"
	case d == dGemini:
		return "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	default:
		return "Internal server error"
	}
}

// rateLimitMessage is the provider-style 429 message.
func rateLimitMessage(d dialect, f *failure) string {
	per := "per minute"
	what := map[dim]string{dimRequests: "requests", dimInput: "input tokens", dimOutput: "output tokens", dimTotal: "tokens"}[f.dim]
	secs := max(int(f.wait.Round(time.Second)/time.Second), 1)
	switch d {
	case dAnthropic:
		return "This request would exceed your organization's rate limit of " + strconv.FormatInt(f.limit, 10) + " " + what + " " + per +
			". For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage."
	case dOpenAI:
		unit := map[dim]string{dimRequests: "requests per min (RPM)", dimInput: "tokens per min (TPM)", dimOutput: "tokens per min (TPM)", dimTotal: "tokens per min (TPM)"}[f.dim]
		return "Rate limit reached for " + f.model + " in organization org-llmfake on " + unit + ": Limit " + strconv.FormatInt(f.limit, 10) +
			". Please try again in " + f.wait.Round(time.Millisecond).String() + ". Visit https://platform.openai.com/account/rate-limits to learn more."
	case dGemini:
		return "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_" +
			geminiMetric(f.dim) + ", limit: " + strconv.FormatInt(f.limit, 10) + ", model: " + f.model + "\nPlease retry in " + protoDuration(f.wait) + "."
	default:
		return "rate limit exceeded: retry in " + strconv.Itoa(secs) + "s"
	}
}

// writeFailure sends f as a complete response.
func writeFailure(w http.ResponseWriter, d dialect, f *failure, reqID string) {
	h := w.Header()
	if d == dOllama && f.status == http.StatusNotFound && f.msg == "" {
		h.Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "404 page not found")
		return
	}
	body := errorBody(d, f, reqID)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(f.status)
	w.Write(body)
}
