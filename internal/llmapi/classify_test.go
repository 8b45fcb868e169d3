package llmapi

import (
	"net/http"
	"testing"
	"time"
)

const (
	anthropicRateLimitBody = `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization (7cd4f1a2) of 80,000 input tokens per minute."},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`
	anthropicSpendBody     = `{"type":"error","error":{"type":"rate_limit_error","message":"Your organization has reached its monthly spend limit.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_2"}`
	geminiRateBody         = `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: gemini-2.5-flash\nPlease retry in 46.123456s.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-flash"},"quotaValue":"10"}]},{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"46s"}]}}`
	geminiLimitZeroBody    = `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_input_token_count, limit: 0, model: gemini-2.5-pro\nPlease retry in 13s.","status":"RESOURCE_EXHAUSTED"}}`
)

func openAIErr(typ, code, msg string) string {
	q := func(s string) string {
		if s == "" {
			return "null"
		}
		return `"` + s + `"`
	}
	return `{"error":{"message":` + q(msg) + `,"type":` + q(typ) + `,"param":null,"code":` + q(code) + `}}`
}

func TestClassify(t *testing.T) {
	t.Parallel()
	type want struct {
		class       Class
		retryable   bool
		retryAfter  time.Duration
		accountWide bool
		header      bool
	}
	tests := []struct {
		name   string
		p      Provider
		status int
		h      http.Header
		body   string
		want   want
	}{
		{"anthropic rate limit", Anthropic, 429, hdr("retry-after", "30"), anthropicRateLimitBody, want{ClassRateLimit, true, 30 * time.Second, true, false}},
		{"anthropic rate limit without retry-after", Anthropic, 429, nil, anthropicRateLimitBody, want{ClassRateLimit, true, 0, true, false}},
		{"anthropic 429 without retry-after or body", Anthropic, 429, nil, ``, want{ClassRateLimit, false, 0, true, false}},
		{"anthropic spend limit", Anthropic, 429, nil, anthropicSpendBody, want{ClassSpendLimit, false, 0, true, false}},
		{"anthropic spend limit ignores x-should-retry", Anthropic, 429, hdr("retry-after", "5", "x-should-retry", "true"), anthropicSpendBody, want{ClassSpendLimit, false, 5 * time.Second, true, false}},
		{"anthropic workspace usage limits (400)", Anthropic, 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified API usage limits. You will regain access on 2025-09-01 at 00:00 UTC."}}`, want{ClassSpendLimit, false, 0, true, false}},
		{"anthropic credit balance", Anthropic, 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`, want{ClassSpendLimit, false, 0, true, false}},
		{"anthropic billing error", Anthropic, 402, nil, `{"type":"error","error":{"type":"billing_error","message":"billing"}}`, want{ClassSpendLimit, false, 0, true, false}},
		{"anthropic overloaded", Anthropic, 529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, want{ClassOverloaded, true, 0, false, false}},
		{"anthropic overloaded with retry-after", Anthropic, 529, hdr("retry-after", "2"), `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, want{ClassOverloaded, true, 2 * time.Second, false, false}},
		{"anthropic api error", Anthropic, 500, nil, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, want{ClassServer, true, 0, false, false}},
		{"anthropic conflict", Anthropic, 409, nil, `{"type":"error","error":{"type":"conflict_error","message":"conflict"}}`, want{ClassServer, true, 0, false, false}},
		{"anthropic timeout", Anthropic, 504, nil, `{"type":"error","error":{"type":"timeout_error","message":"timeout"}}`, want{ClassTimeout, true, 0, false, false}},
		{"request timeout", OpenAI, 408, nil, ``, want{ClassTimeout, true, 0, false, false}},
		{"anthropic too large", Anthropic, 413, nil, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`, want{ClassTooLarge, false, 0, false, false}},
		{"anthropic invalid", Anthropic, 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`, want{ClassClient, false, 0, false, false}},
		{"auth", Anthropic, 401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, want{ClassAuth, false, 0, false, false}},
		{"permission", Anthropic, 403, nil, `{"type":"error","error":{"type":"permission_error","message":"no"}}`, want{ClassAuth, false, 0, false, false}},
		{"not found", Anthropic, 404, nil, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}`, want{ClassNotFound, false, 0, false, false}},
		{"openai rate limit with delay in message", OpenAI, 429, nil, openAIErr("tokens", "rate_limit_exceeded", "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29995, Requested 120. Please try again in 20ms. Visit https://platform.openai.com/account/rate-limits to learn more."), want{ClassRateLimit, true, 20 * time.Millisecond, true, false}},
		{"openai insufficient quota", OpenAI, 429, nil, openAIErr("insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details."), want{ClassSpendLimit, false, 0, true, false}},
		{"openai credit balance exhausted", OpenAI, 429, nil, openAIErr("insufficient_quota", "credit_balance_exhausted", "Your credit balance is exhausted."), want{ClassSpendLimit, false, 0, true, false}},
		{"openai org spend limit", OpenAI, 429, nil, openAIErr("", "organization_spend_limit_exceeded", "limit"), want{ClassSpendLimit, false, 0, true, false}},
		{"openai project spend limit", OpenAI, 429, nil, openAIErr("", "project_spend_limit_exceeded", "limit"), want{ClassSpendLimit, false, 0, true, false}},
		{"openai org usage limit", OpenAI, 429, nil, openAIErr("", "organization_usage_limit_exceeded", "limit"), want{ClassSpendLimit, false, 0, true, false}},
		{"openai quota text only", OpenAI, 429, nil, openAIErr("", "", "You exceeded your current quota, please check your plan and billing details."), want{ClassSpendLimit, false, 0, true, false}},
		{"azure allocation", Azure, 429, hdr("retry-after", "6", "retry-after-ms", "5500"), `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}}`, want{ClassRateLimit, true, 5500 * time.Millisecond, true, false}},
		{"azure allocation delay from text", Azure, 429, nil, `{"error":{"code":"429","message":"Rate limit is exceeded. Try again in 6 seconds."}}`, want{ClassRateLimit, true, 6 * time.Second, true, false}},
		{"azure capacity", Azure, 429, nil, `{"error":{"code":"429","message":"The service is temporarily unable to process your request. Please try again later."}}`, want{ClassOverloaded, true, 0, false, false}},
		{"azure content filter", Azure, 400, nil, `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"}}}}}`, want{ClassContentFilter, false, 0, false, false}},
		{"gemini rate limit with retry info", Gemini, 429, nil, geminiRateBody, want{ClassRateLimit, true, 46 * time.Second, true, false}},
		{"gemini limit 0", Gemini, 429, nil, geminiLimitZeroBody, want{ClassSpendLimit, false, 13 * time.Second, true, false}},
		{"gemini delay only in message", Gemini, 429, nil, `{"error":{"code":429,"message":"Quota exceeded for metric: requests per day, limit: 250. Please retry in 10h17m5.7s.","status":"RESOURCE_EXHAUSTED"}}`, want{ClassRateLimit, true, 10*time.Hour + 17*time.Minute + 5700*time.Millisecond, true, false}},
		{"gemini quota value 0", Gemini, 429, nil, `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaValue":"0"}]}]}}`, want{ClassSpendLimit, false, 0, true, false}},
		{"gemini unavailable", Gemini, 503, nil, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`, want{ClassOverloaded, true, 0, false, false}},
		{"gemini wrapped in an array", Gemini, 500, nil, `[{"error":{"code":500,"message":"Internal error","status":"INTERNAL"}}]`, want{ClassServer, true, 0, false, false}},
		{"gemini failed precondition", Gemini, 400, nil, `{"error":{"code":400,"message":"User location is not supported for the API use.","status":"FAILED_PRECONDITION"}}`, want{ClassClient, false, 0, false, false}},
		{"ollama queue full", Ollama, 503, nil, `{"error":"server busy, please try again.  maximum pending requests exceeded"}`, want{ClassOverloaded, true, 0, false, false}},
		{"html bad gateway", OpenAI, 502, nil, `<html><body>502 Bad Gateway</body></html>`, want{ClassServer, true, 0, false, false}},
		{"not implemented", OpenAI, 501, nil, ``, want{ClassServer, false, 0, false, false}},
		{"x-should-retry false", OpenAI, 500, hdr("x-should-retry", "false"), ``, want{ClassServer, false, 0, false, true}},
		{"x-should-retry true", OpenAI, 400, hdr("x-should-retry", "true"), ``, want{ClassClient, true, 0, false, true}},
		{"success", OpenAI, 200, hdr("x-should-retry", "false"), `{"usage":{}}`, want{ClassNone, false, 0, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := Classify(tt.p, tt.status, tt.h, []byte(tt.body), testNow)
			got := want{f.Class, f.Retryable, f.RetryAfter, f.AccountWide, f.ShouldRetryHeader}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v (failure %+v)", got, tt.want, f)
			}
		})
	}
}

func TestClassifyKeepsErrorFields(t *testing.T) {
	t.Parallel()
	f := Classify(Gemini, 429, nil, []byte(geminiRateBody), testNow)
	if f.Type != "RESOURCE_EXHAUSTED" || f.Code != "429" || f.Message == "" {
		t.Errorf("type %q code %q message %q", f.Type, f.Code, f.Message)
	}
	if got := ClassSpendLimit.String(); got != "spend_limit" {
		t.Errorf("String = %q", got)
	}
}
