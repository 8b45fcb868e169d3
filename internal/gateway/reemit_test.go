package gateway

import (
	"testing"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/sse"
)

// TestStripReemitsEvents: in strip mode the client gets the upstream's
// events byte for byte, fed in any pieces, minus the usage-only chunk; an
// event whose data spans several lines keeps every line (re-emitted as
// several data lines, not one line with a raw newline in it).
func TestStripReemitsEvents(t *testing.T) {
	t.Parallel()
	keep := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n" +
		"event: note\ndata: first\ndata: second\n\n"
	usage := "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3}}\n\n"
	done := "data: [DONE]\n\n"
	in := keep + usage + done
	if !llmapi.IsUsageOnlyChunk([]byte(`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`)) {
		t.Fatal("the test's usage chunk is not one")
	}
	for _, cut := range []int{0, 1, 7, len(keep) - 3, len(keep) + 5, len(in) - 1} {
		b := &meteredBody{parser: &sse.Parser{}}
		b.rewrite([]byte(in[:cut]))
		b.rewrite([]byte(in[cut:]))
		if got, want := string(b.pending), keep+done; got != want {
			t.Errorf("cut at %d: client got %q, want %q", cut, got, want)
		}
	}
}

// TestSplicerKeepsOtherEvents: the events of a continuation that the
// splicer does not rewrite reach the client as the upstream sent them,
// every data line included.
func TestSplicerKeepsOtherEvents(t *testing.T) {
	t.Parallel()
	s := &splicer{open: -1}
	in := "event: ping\ndata: {\"type\": \"ping\"}\n\nevent: note\ndata: a\ndata: b\n\n"
	out, err := s.feed([]byte(in), []byte("before"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "before"+in; got != want {
		t.Fatalf("spliced %q, want %q", got, want)
	}
}

// TestKeepAliveFrames pins the keep-alive bytes: Anthropic's ping event,
// an SSE comment for the other providers' streams.
func TestKeepAliveFrames(t *testing.T) {
	t.Parallel()
	sseInfo := llmapi.RequestInfo{Stream: true, Framing: llmapi.FramingSSE}
	if got := string(keepAliveFrame(llmapi.Anthropic, sseInfo)); got != "event: ping\ndata: {\"type\": \"ping\"}\n\n" {
		t.Errorf("anthropic keep-alive = %q", got)
	}
	if got := string(keepAliveFrame(llmapi.OpenAI, sseInfo)); got != ": keep-alive\n\n" {
		t.Errorf("openai keep-alive = %q", got)
	}
	if got := keepAliveFrame(llmapi.Anthropic, llmapi.RequestInfo{Stream: false, Framing: llmapi.FramingSSE}); got != nil {
		t.Errorf("a response that does not stream gets keep-alive %q", got)
	}
}
