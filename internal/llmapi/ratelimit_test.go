package llmapi

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

var testNow = time.Date(2025, 8, 21, 12, 40, 0, 0, time.UTC)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func lim(limit, remaining int64, reset time.Time) Limit {
	return Limit{Limit: limit, Remaining: remaining, Reset: reset, ResetPrecision: time.Second, Known: true}
}

// rel is lim for a reset given as a delay, written with precision prec.
func rel(limit, remaining int64, reset time.Time, prec time.Duration) Limit {
	return Limit{Limit: limit, Remaining: remaining, Reset: reset, ResetPrecision: prec, ResetRelative: true, Known: true}
}

var unknown = Limit{Limit: -1, Remaining: -1}

func TestParseRateLimits(t *testing.T) {
	t.Parallel()
	reset := time.Date(2025, 8, 21, 12, 40, 59, 0, time.UTC)
	tests := []struct {
		name string
		p    Provider
		h    http.Header
		want RateLimits
	}{
		{"anthropic all families", Anthropic, hdr(
			"anthropic-ratelimit-requests-limit", "1000", "anthropic-ratelimit-requests-remaining", "999", "anthropic-ratelimit-requests-reset", "2025-08-21T12:40:59Z",
			"anthropic-ratelimit-tokens-limit", "96000", "anthropic-ratelimit-tokens-remaining", "95000", "anthropic-ratelimit-tokens-reset", "2025-08-21T12:40:59Z",
			"anthropic-ratelimit-input-tokens-limit", "80000", "anthropic-ratelimit-input-tokens-remaining", "79000", "anthropic-ratelimit-input-tokens-reset", "2025-08-21T12:40:59Z",
			"anthropic-ratelimit-output-tokens-limit", "16000", "anthropic-ratelimit-output-tokens-remaining", "16000", "anthropic-ratelimit-output-tokens-reset", "2025-08-21T12:40:00Z",
			"retry-after", "59", "request-id", "req_011CSHoEeqs5C35K2UUqR7Fy"),
			RateLimits{Requests: lim(1000, 999, reset), Tokens: lim(96000, 95000, reset), InputTokens: lim(80000, 79000, reset),
				OutputTokens: lim(16000, 16000, testNow), TokensUsageBased: unknown}},
		{"anthropic unified (subscription)", Anthropic, hdr(
			"anthropic-ratelimit-unified-status", "rejected", "anthropic-ratelimit-unified-reset", "1755780059"),
			RateLimits{Requests: unknown, Tokens: unknown, InputTokens: unknown, OutputTokens: unknown, TokensUsageBased: unknown,
				UnifiedStatus: "rejected", UnifiedReset: reset}},
		{"openai durations relative to now", OpenAI, hdr(
			"x-ratelimit-limit-requests", "60", "x-ratelimit-limit-tokens", "150000",
			"x-ratelimit-remaining-requests", "59", "x-ratelimit-remaining-tokens", "149984",
			"x-ratelimit-reset-requests", "1s", "x-ratelimit-reset-tokens", "6m0s",
			"x-ratelimit-limit-tokens_usage_based", "40000", "x-ratelimit-remaining-tokens_usage_based", "39880", "x-ratelimit-reset-tokens_usage_based", "180ms"),
			RateLimits{Requests: rel(60, 59, testNow.Add(time.Second), time.Second), Tokens: rel(150000, 149984, testNow.Add(6*time.Minute), time.Second),
				InputTokens: unknown, OutputTokens: unknown, TokensUsageBased: rel(40000, 39880, testNow.Add(180*time.Millisecond), time.Millisecond)}},
		{"azure negative means unknown", Azure, hdr(
			"x-ratelimit-remaining-requests", "-1", "x-ratelimit-remaining-tokens", "0"),
			RateLimits{Requests: unknown, Tokens: Limit{Limit: -1, Remaining: 0, Known: true},
				InputTokens: unknown, OutputTokens: unknown, TokensUsageBased: unknown}},
		{"compatible server with odd resets", OpenAICompatible, hdr(
			"x-ratelimit-limit-requests", "100.0", "x-ratelimit-reset-requests", "30", "x-ratelimit-reset-tokens", "1755780059",
			"x-ratelimit-remaining-tokens", "lots"),
			RateLimits{Requests: rel(100, -1, testNow.Add(30*time.Second), time.Second), Tokens: Limit{Limit: -1, Remaining: -1, Reset: reset, ResetPrecision: time.Second, Known: true},
				InputTokens: unknown, OutputTokens: unknown, TokensUsageBased: unknown}},
		{"zero reset is now, negative unknown", OpenAI, hdr("x-ratelimit-reset-requests", "0s", "x-ratelimit-reset-tokens", "-3s"),
			RateLimits{Requests: Limit{Limit: -1, Remaining: -1, Reset: testNow, ResetPrecision: time.Second, ResetRelative: true, Known: true},
				Tokens: unknown, InputTokens: unknown, OutputTokens: unknown, TokensUsageBased: unknown}},
		{"gemini sends none", Gemini, hdr("x-ratelimit-limit-requests", "60"),
			RateLimits{Requests: unknown, Tokens: unknown, InputTokens: unknown, OutputTokens: unknown, TokensUsageBased: unknown}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ParseRateLimits(tt.p, tt.h, testNow)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestResetPrecision(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v        string
		prec     time.Duration
		relative bool
	}{
		{"2025-08-21T12:40:59Z", time.Second, false},
		{"2025-08-21T12:40:59.5Z", 100 * time.Millisecond, false},
		{"2025-08-21T12:40:59.123+00:00", time.Millisecond, false},
		{"6m0s", time.Second, true},
		{"17.28s", 10 * time.Millisecond, true},
		{"12ms", time.Millisecond, true},
		{"1h", time.Hour, true},
		{"30", time.Second, true},
		{"2.5", 100 * time.Millisecond, true},
		{"1755780059", time.Second, false},
		{"1755780059.3", 100 * time.Millisecond, false},
	}
	for _, tt := range tests {
		h := hdr("anthropic-ratelimit-requests-reset", tt.v)
		l := ParseRateLimits(Anthropic, h, testNow).Requests
		if l.Reset.IsZero() || l.ResetPrecision != tt.prec || l.ResetRelative != tt.relative {
			t.Errorf("%q: reset %v precision %v relative %v; want precision %v relative %v", tt.v, l.Reset, l.ResetPrecision, l.ResetRelative, tt.prec, tt.relative)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{"seconds", hdr("retry-after", "30"), 30 * time.Second, true},
		{"decimal seconds", hdr("retry-after", "1.5"), 1500 * time.Millisecond, true},
		{"http date", hdr("retry-after", testNow.Add(10*time.Second).Format(http.TimeFormat)), 10 * time.Second, true},
		{"date in the past", hdr("retry-after", testNow.Add(-time.Hour).Format(http.TimeFormat)), 0, true},
		{"negative clamps", hdr("retry-after", "-5"), 0, true},
		{"ms preferred", hdr("retry-after", "6", "retry-after-ms", "5500"), 5500 * time.Millisecond, true},
		{"azure x-ms", hdr("retry-after", "6", "x-ms-retry-after-ms", "250.5"), 250500 * time.Microsecond, true},
		{"bad ms falls through", hdr("retry-after-ms", "soon", "retry-after", "2"), 2 * time.Second, true},
		{"daily quota", hdr("retry-after", "86400"), 24 * time.Hour, true},
		{"huge saturates", hdr("retry-after", "1e30"), time.Duration(1<<63 - 1), true},
		{"garbage", hdr("retry-after", "soon"), 0, false},
		{"nan", hdr("retry-after", "NaN"), 0, false},
		{"absent", hdr(), 0, false},
	}
	for _, tt := range tests {
		got, ok := RetryAfter(tt.h, testNow)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: RetryAfter = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}
