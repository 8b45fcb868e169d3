package dashboard

import "time"

// Upstream is one model API behind the gateway.
type Upstream struct {
	Name             string `json:"name"`
	URL              string `json:"url"`
	InFlight         int    `json:"in_flight"` // holding an admission slot
	Queued           int    `json:"queued"`    // waiting for an admission slot
	ConcurrencyLimit int    `json:"concurrency_limit"`
	Breaker          string `json:"breaker"` // closed | open | half-open | disabled
	// Requests counts the client requests the gateway sent upstream
	// (refusals are not among them).
	Requests  float64 `json:"requests"`
	Status429 float64 `json:"status_429"` // failed upstream attempts answered 429
	Status5xx float64 `json:"status_5xx"` // ... answered 5xx (529 included)
	Retries   float64 `json:"retries"`
	// Refusals count the requests the gateway answered itself, by kind
	// (see the Refuse constants).
	Refusals   map[string]float64 `json:"refusals,omitempty"`
	RateLimits []RateLimit        `json:"rate_limits,omitempty"`
}

// Kinds of requests the gateway refuses without sending them upstream.
const (
	RefuseBudget     = "budget"     // 402: a budget was exhausted
	RefuseKey        = "key"        // 401: an unknown or revoked key
	RefuseCapability = "capability" // 403: the capability does not allow it
	RefuseMalformed  = "malformed"  // 400, 413: a body the gateway cannot read
	RefuseRoute      = "route"      // 404: no upstream serves the path
	RefuseConfig     = "config"     // 500: the upstream has no real key
)

// RateLimit is one rate-limit dimension of an upstream.
type RateLimit struct {
	Dim       string  `json:"dim"`
	Limit     int64   `json:"limit"`
	Available float64 `json:"available"`
	// PeriodS is the window the limit applies to, in seconds; 0 when the
	// gateway does not say.
	PeriodS float64 `json:"period_s,omitempty"`
	// Source is where the limit comes from (learned from the provider's
	// headers, or configured), when the gateway says.
	Source string `json:"source,omitempty"`
	// PausedUntil is set while the upstream told the gateway to wait
	// (a 429's Retry-After).
	PausedUntil time.Time `json:"paused_until,omitzero"`
}

// Budget is one budget the gateway enforces and what is left of it.
type Budget struct {
	Scope string `json:"scope"` // "key ID" or "agent NAME", as the gateway names it
	Key   string `json:"key,omitempty"`
	// Agent is who the budget is for (a key's agent, when known).
	Agent     string `json:"agent,omitempty"`
	Unit      string `json:"unit"` // usd (in micro-dollars) | tokens
	Limit     int64  `json:"limit"`
	Spent     int64  `json:"spent"`
	Reserved  int64  `json:"reserved"`
	Remaining int64  `json:"remaining"`
}

// AgentSpend is what one agent consumed through the gateway.
type AgentSpend struct {
	Agent        string  `json:"agent"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	USD          float64 `json:"usd"`
	InFlight     int     `json:"in_flight"`
}

// GatewaySnapshot is the gateway's state at one time.
type GatewaySnapshot struct {
	Time      time.Time    `json:"time"`
	Upstreams []Upstream   `json:"upstreams"`
	Agents    []AgentSpend `json:"agents"`
	// ClientInFlight counts the client requests the gateway is serving:
	// holding a slot, queued for one, waiting on a rate window or a
	// retry's backoff.
	ClientInFlight int `json:"client_in_flight"`
	// Waiting is how many of them wait on a rate window (or a retry's
	// backoff): ClientInFlight less every upstream's InFlight and Queued.
	Waiting int      `json:"waiting"`
	Budgets []Budget `json:"budgets,omitempty"`
}

// QueueDepth is every request waiting: queued for a slot or waiting on a
// rate window.
func (g *GatewaySnapshot) QueueDepth() int {
	n := g.Waiting
	for _, u := range g.Upstreams {
		n += u.Queued
	}
	return n
}

// GatewayPoint is one sample of the gateway's admission state: an
// upstream's, with the gateway's requests waiting on rate windows.
type GatewayPoint struct {
	Time     time.Time `json:"t"`
	InFlight int       `json:"in_flight"`
	Queued   int       `json:"queued"`
	Waiting  int       `json:"waiting"`
	Limit    int       `json:"limit"`
}

// GatewayView is what the gateway panel shows: the latest snapshot and
// each upstream's recent samples, oldest first.
type GatewayView struct {
	Connected bool                      `json:"connected"`
	Error     string                    `json:"error,omitempty"` // the last read failed
	Snapshot  *GatewaySnapshot          `json:"snapshot,omitempty"`
	History   map[string][]GatewayPoint `json:"history,omitempty"`
}
