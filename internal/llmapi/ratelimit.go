package llmapi

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Limit is one rate-limit dimension as response headers report it.
type Limit struct {
	// Limit and Remaining are -1 when unknown (absent, malformed or
	// negative: Azure sends -1 for "unknown").
	Limit, Remaining int64
	// Reset is when the dimension is full again; zero when unknown.
	Reset time.Time
	// ResetPrecision is the granularity the reset was written with: one
	// second for "2025-08-21T12:40:59Z", "6m0s" or "30", a millisecond for
	// "12ms" or "…T12:40:59.123Z". The server may have truncated, rounded
	// or rounded up to it, so the true reset is within ResetPrecision of
	// Reset either way. Zero when Reset is unknown.
	ResetPrecision time.Duration
	// ResetRelative reports a reset given as a delay (OpenAI's "6m0s"):
	// Reset is the receive time plus the delay, and the server measured the
	// delay when it wrote the headers, up to one round trip earlier.
	ResetRelative bool
	// Known reports whether any of the three values was reported.
	Known bool
}

// RateLimits is every rate-limit dimension of one response.
type RateLimits struct {
	Requests     Limit
	Tokens       Limit // Anthropic: the most restrictive token limit
	InputTokens  Limit // Anthropic input-token family
	OutputTokens Limit // Anthropic output-token family
	// TokensUsageBased is OpenAI's x-ratelimit-*-tokens_usage_based family.
	TokensUsageBased Limit
	// UnifiedStatus and UnifiedReset are Anthropic's subscription (OAuth)
	// limits: anthropic-ratelimit-unified-status ("allowed", "rejected",
	// ...) and -reset (unix seconds).
	UnifiedStatus string
	UnifiedReset  time.Time
}

// ParseRateLimits reads the rate-limit headers of a response received at
// now. h must have canonical keys, as net/http delivers them. Anthropic
// sends anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
// {limit,remaining,reset} with RFC 3339 resets; OpenAI, Azure and
// OpenAI-compatible servers send x-ratelimit-{limit,remaining,reset}-
// {requests,tokens} with Go-duration resets relative to now ("6m0s").
// Resets in an unexpected form (seconds, unix time, RFC 3339) are accepted
// too. Gemini and Ollama send none. Malformed values are unknown, never
// errors.
func ParseRateLimits(p Provider, h http.Header, now time.Time) RateLimits {
	u := Limit{Limit: -1, Remaining: -1}
	rl := RateLimits{Requests: u, Tokens: u, InputTokens: u, OutputTokens: u, TokensUsageBased: u}
	switch p {
	case Anthropic:
		rl.Requests = parseLimit(h, now, "Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset")
		rl.Tokens = parseLimit(h, now, "Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset")
		rl.InputTokens = parseLimit(h, now, "Anthropic-Ratelimit-Input-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset")
		rl.OutputTokens = parseLimit(h, now, "Anthropic-Ratelimit-Output-Tokens-Limit", "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset")
		rl.UnifiedStatus = header(h, "Anthropic-Ratelimit-Unified-Status")
		if v := header(h, "Anthropic-Ratelimit-Unified-Reset"); v != "" {
			if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && f < 1e12 {
				sec, frac := math.Modf(f)
				rl.UnifiedReset = time.Unix(int64(sec), int64(frac*1e9)).UTC()
			} else {
				rl.UnifiedReset = parseReset(v, now)
			}
		}
	case Gemini, Ollama:
	default:
		rl.Requests = parseLimit(h, now, "X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests")
		rl.Tokens = parseLimit(h, now, "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens")
		rl.TokensUsageBased = parseLimit(h, now, "X-Ratelimit-Limit-Tokens_usage_based", "X-Ratelimit-Remaining-Tokens_usage_based", "X-Ratelimit-Reset-Tokens_usage_based")
	}
	return rl
}

func header(h http.Header, canonicalKey string) string {
	if v := h[canonicalKey]; len(v) > 0 {
		return strings.TrimSpace(v[0])
	}
	return ""
}

func parseLimit(h http.Header, now time.Time, limitKey, remainingKey, resetKey string) Limit {
	l := Limit{Limit: -1, Remaining: -1}
	if n, ok := parseCount(header(h, limitKey)); ok {
		l.Limit, l.Known = n, true
	}
	if n, ok := parseCount(header(h, remainingKey)); ok {
		l.Remaining, l.Known = n, true
	}
	if v := header(h, resetKey); v != "" {
		if t, prec, rel := parseResetPrecise(v, now); !t.IsZero() {
			l.Reset, l.ResetPrecision, l.ResetRelative, l.Known = t, prec, rel, true
		}
	}
	return l
}

// parseCount parses a non-negative count; negative or malformed is unknown.
func parseCount(v string) (int64, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, n >= 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return saturate(f), true
}

// parseReset reads a reset value in any of the forms providers send: an
// RFC 3339 time, a Go duration ("1s", "6m0s", "12ms"), a number of seconds,
// or unix seconds (a number past 1e9). Zero means unknown, as does a
// negative delay; a zero delay is a reset now.
func parseReset(v string, now time.Time) time.Time {
	t, _, _ := parseResetPrecise(v, now)
	return t
}

// parseResetPrecise is parseReset that also reports the value's precision
// (see Limit.ResetPrecision) and whether it was a delay from now.
func parseResetPrecise(v string, now time.Time) (t time.Time, prec time.Duration, relative bool) {
	if len(v) > 0 && v[0] >= '0' && v[0] <= '9' && strings.IndexByte(v, 'T') > 0 {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t, rfc3339Precision(v), false
		}
	}
	if d, err := time.ParseDuration(v); err == nil {
		// "0s" is a window that ends within the precision from now.
		if d < 0 {
			return time.Time{}, 0, false
		}
		return now.Add(d), durationPrecision(v), true
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return time.Time{}, 0, false
	}
	prec = decimalPrecision(v, time.Second)
	if f >= 1e9 && f < 1e12 { // unix seconds
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC(), prec, false
	}
	return now.Add(seconds(f)), prec, true
}

// decimalPrecision is unit divided by ten for every digit after the
// decimal point of the number v (unit itself for an integer), at least a
// microsecond.
func decimalPrecision(v string, unit time.Duration) time.Duration {
	if e := strings.IndexAny(v, "eE"); e >= 0 {
		v = v[:e]
	}
	dot := strings.IndexByte(v, '.')
	if dot < 0 {
		return unit
	}
	p := unit
	for i := dot + 1; i < len(v) && v[i] >= '0' && v[i] <= '9' && p > time.Microsecond; i++ {
		p /= 10
	}
	return max(p, time.Microsecond)
}

// rfc3339Precision is the precision of an RFC 3339 time: a second, or a
// tenth of one per fractional digit.
func rfc3339Precision(v string) time.Duration {
	t := strings.IndexByte(v, 'T')
	if dot := strings.IndexByte(v[t:], '.'); dot >= 0 {
		return decimalPrecision("0"+v[t+dot:], time.Second)
	}
	return time.Second
}

// durationPrecision is the precision of a Go duration string: that of the
// number in its last, smallest unit ("6m0s": a second; "17.28s": 10 ms;
// "12ms": a millisecond).
func durationPrecision(v string) time.Duration {
	units := []struct {
		suffix string
		d      time.Duration
	}{{"ns", time.Nanosecond}, {"us", time.Microsecond}, {"µs", time.Microsecond}, {"μs", time.Microsecond},
		{"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			i := len(num)
			for i > 0 && (num[i-1] >= '0' && num[i-1] <= '9' || num[i-1] == '.') {
				i--
			}
			return max(decimalPrecision(num[i:], u.d), time.Nanosecond)
		}
	}
	return time.Second
}

// seconds converts a non-negative number of seconds to a Duration,
// saturating instead of overflowing.
func seconds(f float64) time.Duration {
	if f >= float64(math.MaxInt64)/float64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(f * float64(time.Second))
}

// RetryAfter reads the delay a response asks for: retry-after-ms, then
// x-ms-retry-after-ms (Azure; milliseconds, decimals allowed), then
// retry-after as integer or decimal seconds or an HTTP-date relative to now.
// A delay in the past is 0. ok is false when no header held a valid value.
func RetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	for _, key := range [...]string{"Retry-After-Ms", "X-Ms-Retry-After-Ms"} {
		if f, ok := parseNumber(header(h, key)); ok {
			return seconds(max(f, 0) / 1000), true
		}
	}
	v := header(h, "Retry-After")
	if v == "" {
		return 0, false
	}
	if f, ok := parseNumber(v); ok {
		return seconds(max(f, 0)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// parseNumber parses a finite decimal number.
func parseNumber(v string) (float64, bool) {
	if v == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}
