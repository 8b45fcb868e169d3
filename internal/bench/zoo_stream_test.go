package bench

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/sse"
)

// TestZooStreamBytes pins what the zoo's upstreams stream: the providers'
// framing ("event: NAME\ndata: JSON\n\n" for Anthropic, "data: JSON\n\n"
// ending in [DONE] for OpenAI), flushed event by event, and readable by
// the sse package.
func TestZooStreamBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		format string
		want   string
	}{
		{"anthropic", "event: message_start\n" +
			`data: {"message":{"content":[],"id":"msg_zoo","model":"claude-sonnet-4-5","role":"assistant","type":"message","usage":{"input_tokens":5,"output_tokens":1}},"type":"message_start"}` + "\n\n" +
			"event: content_block_start\n" +
			`data: {"content_block":{"text":"","type":"text"},"index":0,"type":"content_block_start"}` + "\n\n" +
			"event: content_block_delta\n" +
			`data: {"delta":{"text":"ok ","type":"text_delta"},"index":0,"type":"content_block_delta"}` + "\n\n" +
			"event: content_block_delta\n" +
			`data: {"delta":{"text":"ok ","type":"text_delta"},"index":0,"type":"content_block_delta"}` + "\n\n" +
			"event: content_block_delta\n" +
			`data: {"delta":{"text":"ok ","type":"text_delta"},"index":0,"type":"content_block_delta"}` + "\n\n" +
			"event: content_block_stop\n" +
			`data: {"index":0,"type":"content_block_stop"}` + "\n\n" +
			"event: message_delta\n" +
			`data: {"delta":{"stop_reason":"end_turn"},"type":"message_delta","usage":{"output_tokens":3}}` + "\n\n" +
			"event: message_stop\n" +
			`data: {"type":"message_stop"}` + "\n\n"},
		{"openai", `data: {"choices":[{"delta":{"content":"ok "},"finish_reason":null,"index":0}],"id":"chatcmpl-zoo","model":"gpt-4o","object":"chat.completion.chunk"}` + "\n\n" +
			`data: {"choices":[{"delta":{"content":"ok "},"finish_reason":null,"index":0}],"id":"chatcmpl-zoo","model":"gpt-4o","object":"chat.completion.chunk"}` + "\n\n" +
			`data: {"choices":[{"delta":{"content":"ok "},"finish_reason":null,"index":0}],"id":"chatcmpl-zoo","model":"gpt-4o","object":"chat.completion.chunk"}` + "\n\n" +
			`data: {"choices":[{"delta":{},"finish_reason":"stop","index":0}],"id":"chatcmpl-zoo","model":"gpt-4o","object":"chat.completion.chunk"}` + "\n\n" +
			`data: {"choices":[],"id":"chatcmpl-zoo","model":"gpt-4o","object":"chat.completion.chunk","usage":{"completion_tokens":3,"prompt_tokens":5,"total_tokens":8}}` + "\n\n" +
			"data: [DONE]\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			t.Parallel()
			u := &zooUpstream{m: ZooModel{Format: tt.format}}
			rec := httptest.NewRecorder()
			u.respond(rec, true, 5, 3, false)
			if got := rec.Body.String(); got != tt.want {
				t.Fatalf("streamed\n%s\nwant\n%s", got, tt.want)
			}
			if !rec.Flushed {
				t.Error("the stream was never flushed")
			}
			if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type %q", ct)
			}
			r := sse.NewReader(strings.NewReader(rec.Body.String()))
			n := 0
			for {
				if _, err := r.Next(); err != nil {
					break
				}
				n++
			}
			if want := strings.Count(tt.want, "\n\n"); n != want {
				t.Errorf("the sse package reads %d events, want %d", n, want)
			}
		})
	}
}
