package llmapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Class is the kind of a failed upstream response, which decides what the
// gateway does with it.
type Class uint8

// Failure classes.
const (
	ClassNone          Class = iota // not a failure (status below 400)
	ClassRateLimit                  // the account's rate limit: wait, then retry
	ClassSpendLimit                 // a spend, credit or quota limit: never retry
	ClassOverloaded                 // provider capacity (529, 503, capacity 429s)
	ClassServer                     // 5xx and conflicts
	ClassTimeout                    // 408, 504
	ClassClient                     // other 4xx: the request is wrong
	ClassAuth                       // 401, 403
	ClassNotFound                   // 404
	ClassTooLarge                   // 413
	ClassContentFilter              // a content filter rejected the request
)

var classNames = [...]string{
	ClassNone:          "none",
	ClassRateLimit:     "rate_limit",
	ClassSpendLimit:    "spend_limit",
	ClassOverloaded:    "overloaded",
	ClassServer:        "server",
	ClassTimeout:       "timeout",
	ClassClient:        "client",
	ClassAuth:          "auth",
	ClassNotFound:      "not_found",
	ClassTooLarge:      "too_large",
	ClassContentFilter: "content_filter",
}

// String returns the class's snake_case name, used in logs and metrics.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}

// Failure is the retry decision for one upstream response.
type Failure struct {
	Class     Class
	Retryable bool
	// RetryAfter is the wait the provider asked for: from the headers (see
	// RetryAfter), else Gemini's RetryInfo.retryDelay, else a delay written
	// in the message ("Please retry in 46s", "try again in 20ms"). Zero when
	// none was given.
	RetryAfter time.Duration
	// AccountWide reports that the failure is about this account's limits,
	// so its rate-limit state should be updated (a 429 rate or spend limit);
	// provider-wide overload (529, capacity 429s) is not.
	AccountWide bool
	// ShouldRetryHeader reports that Retryable came from the response's
	// x-should-retry header, which overrides the status.
	ShouldRetryHeader bool
	// Type, Code and Message are the provider's error type (or status),
	// code and message from the body, when it had them.
	Type, Code, Message string
}

// Classify decides what an upstream response with status ≥ 400 means
// (providers.md §9): 408, 409, 500, 502, 503, 504 and 529 are retryable; so
// is a 429 rate limit, after its delay. Spend and quota limits are never
// retried, whatever x-should-retry says: Anthropic
// error.details.error_code enforced_spend_limit_reached or a message about
// spend or usage limits or the credit balance, OpenAI insufficient_quota and its spend-limit codes or "You exceeded your
// current quota", Gemini "limit: 0" quotas, and 402. 400, 401, 403, 404,
// 413 and content filters are never retried. Azure capacity 429s ("The
// service is temporarily unable to process your request", "high demand")
// are ClassOverloaded; allocation 429s are ClassRateLimit; both are
// retryable. An Anthropic 429 without retry-after is retryable only when
// its body is an ordinary rate_limit_error. Otherwise an x-should-retry header overrides the status. A
// status below 400 is ClassNone. The body may be anything: it is read
// leniently.
func Classify(p Provider, status int, h http.Header, body []byte, now time.Time) Failure {
	if status < 400 {
		return Failure{}
	}
	e := parseErrorBody(body)
	f := Failure{Type: e.typ, Code: e.code, Message: e.message}
	low := strings.ToLower(e.message)
	retryAfter, hasRetryAfter := RetryAfter(h, now)

	switch {
	case status == 429:
		f.Class, f.Retryable, f.AccountWide = ClassRateLimit, true, true
		if isCapacity(low) || e.typ == "overloaded_error" {
			f.Class, f.AccountWide = ClassOverloaded, false
		}
	case status == 529, status == 503:
		f.Class, f.Retryable = ClassOverloaded, true
	case status == 408, status == 504:
		f.Class, f.Retryable = ClassTimeout, true
	case status == 501, status == 505:
		f.Class = ClassServer
	case status >= 500, status == 409:
		f.Class, f.Retryable = ClassServer, true
	case status == 401, status == 403:
		f.Class = ClassAuth
	case status == 402:
		f.Class = ClassSpendLimit
	case status == 404:
		f.Class = ClassNotFound
	case status == 413:
		f.Class = ClassTooLarge
	default:
		f.Class = ClassClient
	}
	if status != 429 && status < 500 && e.typ == "overloaded_error" {
		f.Class, f.Retryable = ClassOverloaded, true
	}
	if isSpend(p, e, low) {
		f.Class, f.Retryable, f.AccountWide = ClassSpendLimit, false, true
	}
	if p == Anthropic && f.Class == ClassRateLimit && !hasRetryAfter && e.typ != "rate_limit_error" {
		// A spend-limit 429 has no retry-after: without one, retry only
		// what is plainly an ordinary rate limit.
		f.Retryable = false
	}
	if isContentFilter(e) {
		f.Class, f.Retryable, f.AccountWide = ClassContentFilter, false, false
	}

	switch {
	case hasRetryAfter:
		f.RetryAfter = retryAfter
	case e.hasDelay:
		f.RetryAfter = e.retryDelay
	default:
		if d, ok := delayInMessage(low); ok {
			f.RetryAfter = d
		}
	}
	if f.Class != ClassSpendLimit {
		switch strings.ToLower(header(h, "X-Should-Retry")) {
		case "true":
			f.Retryable, f.ShouldRetryHeader = true, true
		case "false":
			f.Retryable, f.ShouldRetryHeader = false, true
		}
	}
	return f
}

// openAISpendCodes are OpenAI's 429 codes for exhausted credit or limits.
func openAISpendCode(code string) bool {
	switch code {
	case "insufficient_quota", "credit_balance_exhausted", "organization_spend_limit_exceeded",
		"project_spend_limit_exceeded", "organization_usage_limit_exceeded", "billing_hard_limit_reached":
		return true
	}
	return false
}

func isSpend(p Provider, e errBody, low string) bool {
	// enforced_spend_limit_reached, and its linked_organization_ and
	// contract_ relatives that the Anthropic SDK lists.
	if strings.HasSuffix(e.errorCode, "spend_limit_reached") || e.typ == "billing_error" {
		return true
	}
	switch p {
	case Anthropic:
		return strings.Contains(low, "spend limit") || strings.Contains(low, "usage limits") ||
			strings.Contains(low, "credit balance")
	case Gemini:
		return e.quotaZero || hasLimitZero(low)
	case Ollama:
		return false
	}
	return e.typ == "insufficient_quota" || openAISpendCode(e.code) ||
		strings.Contains(low, "you exceeded your current quota")
}

// hasLimitZero finds Gemini's "limit: 0" (and not "limit: 05" or "0.5").
func hasLimitZero(low string) bool {
	for rest := low; ; {
		i := strings.Index(rest, "limit: 0")
		if i < 0 {
			return false
		}
		rest = rest[i+len("limit: 0"):]
		if rest == "" || !(rest[0] >= '0' && rest[0] <= '9' || rest[0] == '.' && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9') {
			return true
		}
	}
}

func isCapacity(low string) bool {
	return strings.Contains(low, "temporarily unable to process") || strings.Contains(low, "high demand") ||
		strings.Contains(low, "overloaded") || strings.Contains(low, "capacity")
}

func isContentFilter(e errBody) bool {
	switch e.code {
	case "content_filter", "content_policy_violation", "ResponsibleAIPolicyViolation":
		return true
	}
	return e.innerCode == "ResponsibleAIPolicyViolation"
}

// delayInMessage finds a delay written in an error message: "retry in 46s",
// "retry in 10h17m5.7s", "try again in 20ms", "retry after 6 seconds".
func delayInMessage(low string) (time.Duration, bool) {
	for _, phrase := range [...]string{"retry in ", "try again in ", "retry after "} {
		i := strings.Index(low, phrase)
		if i < 0 {
			continue
		}
		rest := low[i+len(phrase):]
		j := 0
		for j < len(rest) && strings.IndexByte("0123456789.hmsun", rest[j]) >= 0 {
			j++
		}
		tok := strings.TrimRight(rest[:j], ".")
		if d, err := time.ParseDuration(tok); err == nil && d >= 0 {
			return d, true
		}
		f, err := strconv.ParseFloat(tok, 64)
		if err != nil || f < 0 {
			continue
		}
		unit := strings.TrimLeft(rest[j:], " ")
		switch {
		case strings.HasPrefix(unit, "ms"), strings.HasPrefix(unit, "millisecond"):
			return seconds(f / 1000), true
		case strings.HasPrefix(unit, "s"):
			return seconds(f), true
		case strings.HasPrefix(unit, "min"):
			return seconds(f * 60), true
		case strings.HasPrefix(unit, "h"):
			return seconds(f * 3600), true
		}
	}
	return 0, false
}

// errBody is what an error response body says, in any provider's shape.
type errBody struct {
	typ, code, message string
	errorCode          string // Anthropic error.details.error_code
	innerCode          string // Azure error.innererror.code
	retryDelay         time.Duration
	hasDelay           bool
	quotaZero          bool // a Gemini QuotaFailure violation with quotaValue 0
}

func parseErrorBody(body []byte) errBody {
	var e errBody
	s := newScanner(body)
	if s.peek() == '[' { // Gemini may wrap an error in an array
		if !s.enterArray() || !s.elem(0) {
			return e
		}
	}
	if !s.enterObject() {
		return e
	}
	for i := 0; s.member(i); i++ {
		if string(s.key) != "error" {
			s.skip()
			continue
		}
		if s.peek() == '"' { // Ollama
			e.message, _ = s.str()
			continue
		}
		if !s.enterObject() {
			continue
		}
		var status string
		for j := 0; s.member(j); j++ {
			switch string(s.key) {
			case "type":
				e.typ, _ = s.str()
			case "status":
				status, _ = s.str()
			case "code":
				e.code = scalarText(&s)
			case "message":
				e.message, _ = s.str()
			case "details":
				e.details(&s)
			case "innererror":
				if s.enterObject() {
					for k := 0; s.member(k); k++ {
						if string(s.key) == "code" {
							e.innerCode, _ = s.str()
						} else {
							s.skip()
						}
					}
				}
			default:
				s.skip()
			}
		}
		if e.typ == "" {
			e.typ = status
		}
	}
	return e
}

// details reads Anthropic's details object or Gemini's details array.
func (e *errBody) details(s *scanner) {
	switch s.peek() {
	case '{':
		s.enterObject()
		for i := 0; s.member(i); i++ {
			if string(s.key) == "error_code" {
				e.errorCode, _ = s.str()
			} else {
				s.skip()
			}
		}
	case '[':
		s.enterArray()
		for i := 0; s.elem(i); i++ {
			if !s.enterObject() {
				continue
			}
			for j := 0; s.member(j); j++ {
				switch string(s.key) {
				case "retryDelay":
					if v, ok := s.str(); ok {
						if d, err := time.ParseDuration(v); err == nil && d >= 0 {
							e.retryDelay, e.hasDelay = d, true
						}
					}
				case "violations":
					e.violations(s)
				default:
					s.skip()
				}
			}
		}
	default:
		s.skip()
	}
}

func (e *errBody) violations(s *scanner) {
	if !s.enterArray() {
		return
	}
	for i := 0; s.elem(i); i++ {
		if !s.enterObject() {
			continue
		}
		for j := 0; s.member(j); j++ {
			if string(s.key) == "quotaValue" {
				if scalarText(s) == "0" {
					e.quotaZero = true
				}
			} else {
				s.skip()
			}
		}
	}
}
