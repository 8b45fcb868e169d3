// Package sdkcompat_test checks llmapi's error shapes against the official
// Anthropic and OpenAI Go SDKs. It lives apart from llmapi so that the SDKs
// stay out of llmapi's test and fuzz binaries.
package sdkcompat_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/apiary-dev/apiary/internal/llmapi"
)

// server answers every request with status, content type and body.
func server(t *testing.T, status int, contentType string, body []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("X-Should-Retry", "false")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const sdkMessage = "apiary: budget \"agent-7\" exhausted"

// TestAnthropicSDKReadsOurErrors: the official SDK parses ErrorBody and
// StreamErrorFrame into its own error type, with our kind and message.
func TestAnthropicSDKReadsOurErrors(t *testing.T) {
	t.Parallel()
	params := anthropic.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 16,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}
	t.Run("body", func(t *testing.T) {
		t.Parallel()
		url := server(t, 429, "application/json", llmapi.ErrorBody(llmapi.Anthropic, 429, llmapi.KindRateLimit, sdkMessage))
		c := anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
		_, err := c.Messages.New(t.Context(), params)
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("err = %v, want *anthropic.Error", err)
		}
		if apiErr.StatusCode != 429 || apiErr.Type() != anthropic.ErrorTypeRateLimitError || apiErr.Message != sdkMessage {
			t.Errorf("status %d type %q message %q", apiErr.StatusCode, apiErr.Type(), apiErr.Message)
		}
	})
	t.Run("stream", func(t *testing.T) {
		t.Parallel()
		stream := `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":5,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}

` + string(llmapi.StreamErrorFrame(llmapi.Anthropic, llmapi.EndpointMessages, llmapi.KindOverloaded, sdkMessage))
		url := server(t, 200, "text/event-stream", []byte(stream))
		c := anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
		s := c.Messages.NewStreaming(t.Context(), params)
		n := 0
		for s.Next() {
			n++
		}
		if n != 3 {
			t.Errorf("events before the error = %d, want 3", n)
		}
		err := s.Err()
		var apiErr *anthropic.Error
		switch {
		case errors.As(err, &apiErr):
			if apiErr.Type() != anthropic.ErrorTypeOverloadedError || apiErr.Message != sdkMessage {
				t.Errorf("type %q message %q", apiErr.Type(), apiErr.Message)
			}
		case err == nil || !strings.Contains(err.Error(), "overloaded_error"):
			t.Errorf("stream err = %v, want the overloaded error", err)
		}
	})
}

// TestOpenAISDKReadsOurErrors: the official SDK parses our error bodies and
// ends chat and Responses streams on our terminal frames.
func TestOpenAISDKReadsOurErrors(t *testing.T) {
	t.Parallel()
	chat := openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	t.Run("body", func(t *testing.T) {
		t.Parallel()
		url := server(t, 429, "application/json", llmapi.ErrorBody(llmapi.OpenAI, 429, llmapi.KindBilling, sdkMessage))
		c := openai.NewClient(ooption.WithBaseURL(url), ooption.WithAPIKey("k"), ooption.WithMaxRetries(0))
		_, err := c.Chat.Completions.New(t.Context(), chat)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("err = %v, want *openai.Error", err)
		}
		if apiErr.StatusCode != 429 || apiErr.Type != "insufficient_quota" || apiErr.Code != "insufficient_quota" || apiErr.Message != sdkMessage {
			t.Errorf("status %d type %q code %q message %q", apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message)
		}
	})
	t.Run("chat stream", func(t *testing.T) {
		t.Parallel()
		stream := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}

` + string(llmapi.StreamErrorFrame(llmapi.OpenAI, llmapi.EndpointChat, llmapi.KindAPI, sdkMessage))
		url := server(t, 200, "text/event-stream", []byte(stream))
		c := openai.NewClient(ooption.WithBaseURL(url), ooption.WithAPIKey("k"), ooption.WithMaxRetries(0))
		s := c.Chat.Completions.NewStreaming(t.Context(), chat)
		n := 0
		for s.Next() {
			n++
		}
		// The SDK quotes the error object's JSON in its message.
		if n != 1 || s.Err() == nil || !strings.Contains(s.Err().Error(), `budget \"agent-7\" exhausted`) {
			t.Errorf("chunks %d, err %v; want 1 chunk then our error", n, s.Err())
		}
	})
	t.Run("responses stream", func(t *testing.T) {
		t.Parallel()
		url := server(t, 200, "text/event-stream", llmapi.StreamErrorFrame(llmapi.OpenAI, llmapi.EndpointResponses, llmapi.KindOverloaded, sdkMessage))
		c := openai.NewClient(ooption.WithBaseURL(url), ooption.WithAPIKey("k"), ooption.WithMaxRetries(0))
		s := c.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{Model: "gpt-4.1", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
		var failed *responses.ResponseFailedEvent
		for s.Next() {
			if ev, ok := s.Current().AsAny().(responses.ResponseFailedEvent); ok {
				failed = &ev
			}
		}
		if s.Err() != nil {
			t.Fatalf("stream err = %v", s.Err())
		}
		if failed == nil || failed.Response.Status != "failed" || failed.Response.Error.Message != sdkMessage || failed.Response.Error.Code != "server_error" {
			t.Errorf("failed event = %+v", failed)
		}
	})
}
