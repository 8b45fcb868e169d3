package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/apiary-dev/apiary/internal/llmfake"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// Tests with the official SDKs: they must parse everything llmfake sends.

const sdkScript = `
scripts:
  - name: tools
    turns:
      - text: "Let me write that."
        tool_calls:
          - name: Write
            input: {file_path: /tmp/x.txt, content: "hi\n", mode: 420}
`

func wantToolInput() map[string]any {
	return map[string]any{"file_path": "/tmp/x.txt", "content": "hi\n", "mode": 420.0}
}

func anthropicClient(t *testing.T, url string, opts ...aoption.RequestOption) anthropic.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	base := []aoption.RequestOption{aoption.WithBaseURL(url), aoption.WithAPIKey("sdk-key"),
		aoption.WithHTTPClient(&http.Client{Transport: tr})}
	return anthropic.NewClient(append(base, opts...)...)
}

func anthropicParams(tools bool) anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("write the file please"))},
	}
	if tools {
		p.Tools = []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"file_path": map[string]any{"type": "string"}}}, "Write")}
	}
	return p
}

func TestAnthropicSDK(t *testing.T) {
	t.Parallel()
	s := newServer(t, llmfake.Config{Limits: llmfake.Limits{RPM: 100, TPM: 100000}, Scripts: scripted(t, sdkScript)})
	hs := startHTTP(t, s)
	client := anthropicClient(t, hs.URL)

	t.Run("non-streaming tool use", func(t *testing.T) {
		var raw *http.Response
		msg, err := client.Messages.New(t.Context(), anthropicParams(true), aoption.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 2 {
			t.Fatalf("message %+v", msg)
		}
		tu := msg.Content[1].AsToolUse()
		var in map[string]any
		if err := json.Unmarshal(tu.Input, &in); err != nil || tu.Name != "Write" || !jsonEqual(in, wantToolInput()) {
			t.Errorf("tool_use %s %s (%v)", tu.Name, tu.Input, err)
		}
		if msg.Usage.InputTokens < 5 || msg.Usage.OutputTokens != int64(tokensOf(len("Let me write that."))+tokensOf(len("Write")+len(tu.Input))) {
			t.Errorf("usage %+v", msg.Usage)
		}
		if raw.Header.Get("request-id") == "" || raw.Header.Get("anthropic-ratelimit-requests-limit") != "100" ||
			raw.Header.Get("anthropic-ratelimit-tokens-limit") != "100000" {
			t.Errorf("headers %v", raw.Header)
		}
		if _, err := time.Parse(time.RFC3339, raw.Header.Get("anthropic-ratelimit-requests-reset")); err != nil {
			t.Errorf("reset header: %v", err)
		}
	})
	t.Run("streaming text", func(t *testing.T) {
		stream := client.Messages.NewStreaming(t.Context(), anthropicParams(false))
		var msg anthropic.Message
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		text := msg.Content[0].AsText().Text
		if msg.Usage.OutputTokens != defaultTokens || int(msg.Usage.OutputTokens) != tokensOf(len(text)) || msg.StopReason != anthropic.StopReasonEndTurn {
			t.Errorf("message %q usage %+v stop %s", text, msg.Usage, msg.StopReason)
		}
	})
	t.Run("streaming tool use", func(t *testing.T) {
		stream := client.Messages.NewStreaming(t.Context(), anthropicParams(true), aoption.WithHeader("X-Claude-Code-Session-Id", "stream-tools"))
		var msg anthropic.Message
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		var in map[string]any
		tu := msg.Content[1].AsToolUse()
		if err := json.Unmarshal(tu.Input, &in); err != nil || !jsonEqual(in, wantToolInput()) || msg.StopReason != anthropic.StopReasonToolUse {
			t.Errorf("accumulated tool_use %s (%v), stop %s", tu.Input, err, msg.StopReason)
		}
	})
	t.Run("count tokens", func(t *testing.T) {
		n, err := client.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{Model: "claude-sonnet-4-5",
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("12345678"))}})
		if err != nil || n.InputTokens != 2 {
			t.Errorf("count %+v %v", n, err)
		}
	})
}

func TestSDKRetryOn429(t *testing.T) {
	t.Parallel()
	for _, window := range []llmfake.Window{llmfake.WindowFixed, llmfake.WindowBucket} {
		t.Run(string(window), func(t *testing.T) {
			t.Parallel()
			// RPM 1 with a 60 s window scaled to 250 ms.
			s := newServer(t, llmfake.Config{TimeScale: 250.0 / 60000, Limits: llmfake.Limits{RPM: 1, Window: window}})
			hs := startHTTP(t, s)
			ac := anthropicClient(t, hs.URL, aoption.WithMaxRetries(3))
			otr := &http.Transport{}
			t.Cleanup(otr.CloseIdleConnections)
			oc := openai.NewClient(ooption.WithBaseURL(hs.URL+"/v1/"), ooption.WithAPIKey("sdk-key"),
				ooption.WithHTTPClient(&http.Client{Transport: otr}), ooption.WithMaxRetries(3))
			for i := range 2 {
				if _, err := ac.Messages.New(t.Context(), anthropicParams(false)); err != nil {
					t.Fatalf("anthropic call %d: %v", i, err)
				}
				if _, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}); err != nil {
					t.Fatalf("openai call %d: %v", i, err)
				}
			}
			// Both clients share the key: every second call hit the limit
			// and the SDK retried it after retry-after.
			k := s.Stats().Keys["sdk-key"]
			if k.ByStatus["200"] != 4 || k.RateLimited < 3 {
				t.Errorf("stats %+v", k.Counters)
			}
			for _, w := range k.Windows {
				if window == llmfake.WindowFixed && w.Requests > 1 {
					t.Errorf("window %d admitted %d", w.Index, w.Requests)
				}
			}
		})
	}
}

func openaiClient(t *testing.T, url string) openai.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return openai.NewClient(ooption.WithBaseURL(url+"/v1/"), ooption.WithAPIKey("sdk-key"), ooption.WithHTTPClient(&http.Client{Transport: tr}))
}

func TestOpenAISDKChat(t *testing.T) {
	t.Parallel()
	s := newServer(t, llmfake.Config{Limits: llmfake.Limits{RPM: 100, TPM: 100000}, Scripts: scripted(t, sdkScript)})
	hs := startHTTP(t, s)
	client := openaiClient(t, hs.URL)
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "Write"})}

	t.Run("non-streaming tool call", func(t *testing.T) {
		var raw *http.Response
		res, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o", Tools: tools,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("write it")}}, ooption.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		c := res.Choices[0]
		var in map[string]any
		if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 ||
			json.Unmarshal([]byte(c.Message.ToolCalls[0].Function.Arguments), &in) != nil || !jsonEqual(in, wantToolInput()) {
			t.Errorf("choice %+v", c)
		}
		if res.Usage.TotalTokens != res.Usage.PromptTokens+res.Usage.CompletionTokens || res.Usage.CompletionTokens == 0 {
			t.Errorf("usage %+v", res.Usage)
		}
		if raw.Header.Get("x-ratelimit-limit-requests") != "100" || raw.Header.Get("x-ratelimit-remaining-requests") != "99" {
			t.Errorf("headers %v", raw.Header)
		}
		if _, err := time.ParseDuration(raw.Header.Get("x-ratelimit-reset-tokens")); err != nil {
			t.Errorf("reset-tokens: %v", err)
		}
	})
	t.Run("streaming with usage", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		text := acc.Choices[0].Message.Content
		if acc.Usage.CompletionTokens != int64(tokensOf(len(text))) || acc.Usage.CompletionTokens != defaultTokens || acc.Choices[0].FinishReason != "stop" {
			t.Errorf("accumulated %q usage %+v", text, acc.Usage)
		}
	})
	t.Run("streaming tool call", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o", Tools: tools,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("write it again")}})
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		var in map[string]any
		calls := acc.Choices[0].Message.ToolCalls
		if len(calls) != 1 || calls[0].Function.Name != "Write" || json.Unmarshal([]byte(calls[0].Function.Arguments), &in) != nil || !jsonEqual(in, wantToolInput()) {
			t.Errorf("tool calls %+v", calls)
		}
	})
}

func TestOpenAISDKResponses(t *testing.T) {
	t.Parallel()
	s := newServer(t, llmfake.Config{})
	hs := startHTTP(t, s)
	client := openaiClient(t, hs.URL)
	params := responses.ResponseNewParams{Model: "gpt-4o", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}}
	res, err := client.Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || res.Usage.OutputTokens != defaultTokens || int(res.Usage.OutputTokens) != tokensOf(len(res.OutputText())) {
		t.Errorf("response %q status %s usage %+v", res.OutputText(), res.Status, res.Usage)
	}
	stream := client.Responses.NewStreaming(t.Context(), params)
	var text strings.Builder
	var completed *responses.Response
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			r := ev.Response
			completed = &r
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if completed == nil || completed.Usage.OutputTokens != int64(tokensOf(text.Len())) || completed.OutputText() != text.String() {
		t.Errorf("streamed %q, completed %+v", text.String(), completed)
	}
}
