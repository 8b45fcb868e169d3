package llmapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
)

// A gateway inspects the request, meters the streamed response as it
// forwards it, and prices the usage.
func Example() {
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Say hi"}]}`)
	info, err := llmapi.InspectRequest(llmapi.Anthropic, "/v1/messages", nil, body)
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Model, info.Stream, info.Framing, info.MaxOutputTokens)

	upstream := "event: message_start\n" +
		`data: {"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":12,"cache_read_input_tokens":2048,"output_tokens":1}}}` + "\n\n" +
		"event: content_block_delta\n" +
		`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi!"}}` + "\n\n" +
		"event: message_delta\n" +
		`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}` + "\n\n" +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"
	m := llmapi.NewStreamMeter(info)
	for chunk := range strings.SplitSeq(upstream, "\n") { // any read boundaries
		m.Feed([]byte(chunk + "\n"))
	}
	res := m.Finish(true)
	cost, _ := llmapi.DefaultPrices().Cost(res.Model, res.Usage)
	fmt.Println(res.Outcome, res.Usage.InputTokens, res.Usage.CacheReadInputTokens, res.Usage.OutputTokens, cost)
	// Output:
	// claude-sonnet-4-5 true sse 1024
	// complete 12 2048 5 $0.000725
}

// Classify decides whether a failed upstream response may be retried.
func ExampleClassify() {
	h := http.Header{}
	body := []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"Monthly spend limit reached.","details":{"error_code":"enforced_spend_limit_reached"}}}`)
	f := llmapi.Classify(llmapi.Anthropic, 429, h, body, time.Now())
	fmt.Println(f.Class, f.Retryable)

	h.Set("Retry-After", "20")
	f = llmapi.Classify(llmapi.Anthropic, 429, h, []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}`), time.Now())
	fmt.Println(f.Class, f.Retryable, f.RetryAfter)
	// Output:
	// spend_limit false
	// rate_limit true 20s
}
