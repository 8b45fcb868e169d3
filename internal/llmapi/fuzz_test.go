package llmapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"testing"
)

var fuzzInfos = []RequestInfo{anthropicInfo, chatInfo, responsesInfo, geminiSSEInfo, geminiArrInfo, ollamaChatInfo,
	{Provider: Anthropic, Endpoint: EndpointMessages, Framing: FramingJSON, InputEstimate: 7}}

// FuzzStreamMeter: any bytes, any framing, any split: no panic, and the
// result does not depend on how the bytes were split.
func FuzzStreamMeter(f *testing.F) {
	for i, c := range meterCases {
		for j, info := range fuzzInfos {
			if info == c.info {
				f.Add([]byte(c.stream), uint8(j), uint16(i*7), uint16(i*13+5), c.eof)
			}
		}
	}
	f.Add([]byte("data: {\"type\":\"message_stop\"}\r\n\r"), uint8(0), uint16(3), uint16(30), true)
	f.Add([]byte("[{\"a\":\"\\\"]\"},1,\"x\"]"), uint8(4), uint16(2), uint16(9), true)
	f.Fuzz(func(t *testing.T, data []byte, which uint8, s1, s2 uint16, eof bool) {
		info := fuzzInfos[int(which)%len(fuzzInfos)]
		want := meter(info, []string{string(data)}, eof)
		a, b := 0, 0
		if len(data) > 0 {
			a, b = int(s1)%(len(data)+1), int(s2)%(len(data)+1)
			if a > b {
				a, b = b, a
			}
		}
		got := meter(info, []string{string(data[:a]), string(data[a:b]), string(data[b:])}, eof)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("split %d/%d: got %+v, want %+v", a, b, got, want)
		}
		if want.Usage.InputTokens < 0 || want.Usage.OutputTokens < 0 || want.Events < 0 {
			t.Fatalf("negative counts: %+v", want)
		}
		if want.Outcome == OutcomeErrored && want.ErrorType == "" && want.ErrorMessage == "" {
			t.Fatalf("errored without a description: %+v", want)
		}
	})
}

func FuzzParseRateLimits(f *testing.F) {
	f.Add(uint8(0), "1000", "999", "2025-08-21T12:40:59Z")
	f.Add(uint8(1), "60", "59", "6m0s")
	f.Add(uint8(2), "-1", "0", "1755780059")
	f.Add(uint8(1), "1e400", "NaN", "-3s")
	f.Add(uint8(0), "", "x", "2025-13-45T99:99:99Z")
	providers := []Provider{Anthropic, OpenAI, Azure, OpenAICompatible, Gemini}
	f.Fuzz(func(t *testing.T, which uint8, limit, remaining, reset string) {
		p := providers[int(which)%len(providers)]
		h := http.Header{}
		for _, fam := range []string{"Requests", "Tokens", "Input-Tokens", "Output-Tokens"} {
			h.Set("Anthropic-Ratelimit-"+fam+"-Limit", limit)
			h.Set("Anthropic-Ratelimit-"+fam+"-Remaining", remaining)
			h.Set("Anthropic-Ratelimit-"+fam+"-Reset", reset)
			h.Set("X-Ratelimit-Limit-"+fam, limit)
			h.Set("X-Ratelimit-Remaining-"+fam, remaining)
			h.Set("X-Ratelimit-Reset-"+fam, reset)
		}
		h.Set("Anthropic-Ratelimit-Unified-Reset", reset)
		rl := ParseRateLimits(p, h, testNow)
		for _, l := range []Limit{rl.Requests, rl.Tokens, rl.InputTokens, rl.OutputTokens, rl.TokensUsageBased} {
			if l.Limit < -1 || l.Remaining < -1 {
				t.Fatalf("negative value reported: %+v", l)
			}
			if !l.Known && (l.Limit != -1 || l.Remaining != -1 || !l.Reset.IsZero()) {
				t.Fatalf("unknown dimension with values: %+v", l)
			}
		}
	})
}

func FuzzRetryAfter(f *testing.F) {
	f.Add("", "", "30")
	f.Add("1500", "", "")
	f.Add("", "250.5", "x")
	f.Add("-1", "NaN", "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add("1e308", "", "99999999999999999999")
	f.Fuzz(func(t *testing.T, ms, xms, ra string) {
		h := http.Header{}
		h.Set("Retry-After-Ms", ms)
		h.Set("X-Ms-Retry-After-Ms", xms)
		h.Set("Retry-After", ra)
		d, ok := RetryAfter(h, testNow)
		if d < 0 || (!ok && d != 0) {
			t.Fatalf("RetryAfter(%q, %q, %q) = %v, %v", ms, xms, ra, d, ok)
		}
	})
}

func FuzzInspectRequest(f *testing.F) {
	f.Add("/v1/messages", "", []byte(anthropicRequest))
	f.Add("/v1/chat/completions", "", []byte(`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":false},"messages":[]}`))
	f.Add("/v1beta/models/gemini-2.5-pro:streamGenerateContent", "alt=sse", []byte(`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":8}}`))
	f.Add("/api/chat", "", []byte(`{"model":"llama3.2","stream":false,"options":{"num_predict":-1}}`))
	f.Add("/v1/responses", "", []byte(`{"input":[{"role":"user","content":[{"type":"input_text","text":"x"}]}]}`))
	f.Add("/v1/messages", "", []byte(`{"model":"x",`))
	f.Fuzz(func(t *testing.T, path, query string, body []byte) {
		q, _ := url.ParseQuery(query)
		info, err := InspectRequest(OpenAI, path, q, body)
		if err != nil {
			if !errors.Is(err, ErrMalformedBody) {
				t.Fatalf("error %v does not match ErrMalformedBody", err)
			}
			return
		}
		if info.MaxOutputTokens < 0 || info.InputEstimate < 0 {
			t.Fatalf("negative values: %+v", info)
		}
		if len(body) > 0 && info.Endpoint != EndpointOther && info.Endpoint != EndpointModels && !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if info.Endpoint != EndpointChat || len(body) == 0 {
			return
		}
		out, err := InjectIncludeUsage(body)
		if err != nil {
			t.Fatalf("InjectIncludeUsage on an accepted body: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("InjectIncludeUsage(%q) = %q, not JSON", body, out)
		}
		again, err := InspectRequest(OpenAI, path, q, out)
		if err != nil || !again.IncludeUsage || again.Model != info.Model || again.Stream != info.Stream || again.MaxOutputTokens != info.MaxOutputTokens {
			t.Fatalf("after injection %+v (%v), before %+v", again, err, info)
		}
	})
}

func FuzzClassify(f *testing.F) {
	f.Add(uint8(0), 429, []byte(anthropicSpendBody), "", "")
	f.Add(uint8(0), 429, []byte(anthropicRateLimitBody), "30", "")
	f.Add(uint8(1), 429, []byte(openAIErr("insufficient_quota", "insufficient_quota", "q")), "", "true")
	f.Add(uint8(2), 429, []byte(geminiRateBody), "", "")
	f.Add(uint8(2), 429, []byte(geminiLimitZeroBody), "", "false")
	f.Add(uint8(3), 503, []byte(`{"error":"busy"}`), "", "")
	f.Add(uint8(4), 429, []byte(`{"error":{"code":"429","message":"Please retry after 6 seconds."}}`), "6", "")
	providers := []Provider{Anthropic, OpenAI, Gemini, Ollama, Azure}
	f.Fuzz(func(t *testing.T, which uint8, status int, body []byte, retryAfter, shouldRetry string) {
		p := providers[int(which)%len(providers)]
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		h.Set("X-Should-Retry", shouldRetry)
		fl := Classify(p, status, h, body, testNow)
		switch {
		case status < 400 && fl != (Failure{}):
			t.Fatalf("status %d classified %+v", status, fl)
		case fl.Class == ClassSpendLimit && fl.Retryable:
			t.Fatalf("spend limit retryable: %+v", fl)
		case fl.RetryAfter < 0:
			t.Fatalf("negative delay: %+v", fl)
		case status >= 400 && fl.Class == ClassNone:
			t.Fatalf("status %d not classified", status)
		}
		if fl.Class == ClassSpendLimit && fl.ShouldRetryHeader {
			t.Fatalf("x-should-retry applied to a spend limit: %+v", fl)
		}
	})
}
