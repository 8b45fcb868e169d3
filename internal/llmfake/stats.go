package llmfake

import (
	"sort"
	"strconv"
	"time"
)

// Counters count the traffic of the whole server or of one API key. Only
// model endpoints are counted, not the control endpoints.
type Counters struct {
	// Requests counts every request, whatever its outcome.
	Requests int64 `json:"requests"`
	// ByStatus counts responses by HTTP status ("200", "429", ...); resets
	// have no status and are only in Resets.
	ByStatus map[string]int64 `json:"by_status"`
	// RateLimited counts 429s from the rate limiter.
	RateLimited int64 `json:"rate_limited"`
	// Overloaded counts rejections by the concurrency cap (529 or 503).
	Overloaded int64 `json:"overloaded"`
	// ServerErrors counts every 5xx (injected errors and the cap).
	ServerErrors int64 `json:"server_errors"`
	// Resets counts TCP resets, Cuts truncated responses, StreamErrors
	// in-stream error events.
	Resets       int64 `json:"resets"`
	Cuts         int64 `json:"cuts"`
	StreamErrors int64 `json:"stream_errors"`
	// TokensIn counts input tokens charged on admission, TokensOut output
	// tokens generated.
	TokensIn  int64 `json:"tokens_in"`
	TokensOut int64 `json:"tokens_out"`
}

// KeyStats is the traffic and rate-limit state of one API key.
type KeyStats struct {
	Counters
	InFlight    int `json:"in_flight"`
	MaxInFlight int `json:"max_in_flight"`
	// Limits holds the configured dimensions ("requests", "input_tokens",
	// "output_tokens", "tokens") now.
	Limits map[string]LimitState `json:"limits,omitempty"`
	// Windows are the most recent observation windows (of the configured
	// window length, also in bucket mode), oldest first.
	Windows []WindowStats `json:"windows,omitempty"`
}

// WindowStats is one key's traffic in one window [Start, Start+window).
// Requests and TokensIn count admissions in the window, TokensOut output
// generated in it, Rejected the 429s of the rate limiter.
type WindowStats struct {
	Index     int64     `json:"index"`
	Start     time.Time `json:"start"`
	Requests  int64     `json:"requests"`
	Rejected  int64     `json:"rejected"`
	TokensIn  int64     `json:"tokens_in"`
	TokensOut int64     `json:"tokens_out"`
}

// Stats is a snapshot of a Server's traffic, returned by Server.Stats and
// GET /_stats.
type Stats struct {
	Now time.Time `json:"now"`
	// Epoch is where window 0 starts; Window is the effective (scaled)
	// window length.
	Epoch       time.Time           `json:"epoch"`
	Window      string              `json:"window"`
	InFlight    int                 `json:"in_flight"`
	MaxInFlight int                 `json:"max_in_flight"`
	Total       Counters            `json:"total"`
	Keys        map[string]KeyStats `json:"keys"`
}

// keyState is everything the server keeps per API key; guarded by
// Server.mu.
type keyState struct {
	meters      [numDims]meter
	windows     [windowHistory]windowCount
	c           counters
	inFlight    int
	maxInFlight int
}

// counters is the internal form of Counters.
type counters struct {
	requests, rateLimited, overloaded, serverErrors int64
	resets, cuts, streamErrors, in, out             int64
	byStatus                                        map[int]int64
}

func (c *counters) status(code int) {
	if c.byStatus == nil {
		c.byStatus = make(map[int]int64, 4)
	}
	c.byStatus[code]++
	if code >= 500 {
		c.serverErrors++
	}
}

func (c *counters) export() Counters {
	out := Counters{
		Requests: c.requests, ByStatus: make(map[string]int64, len(c.byStatus)), RateLimited: c.rateLimited,
		Overloaded: c.overloaded, ServerErrors: c.serverErrors, Resets: c.resets, Cuts: c.cuts,
		StreamErrors: c.streamErrors, TokensIn: c.in, TokensOut: c.out,
	}
	for k, v := range c.byStatus {
		out.ByStatus[strconv.Itoa(k)] = v
	}
	return out
}

func (k *keyState) export(v *rateView) KeyStats {
	ks := KeyStats{Counters: k.c.export(), InFlight: k.inFlight, MaxInFlight: k.maxInFlight, Limits: k.limitStates(v)}
	for _, w := range k.windows {
		if w.valid {
			ks.Windows = append(ks.Windows, WindowStats{
				Index: w.idx, Start: v.epoch.Add(time.Duration(w.idx) * v.window),
				Requests: w.requests, Rejected: w.rejected, TokensIn: w.in, TokensOut: w.out,
			})
		}
	}
	sort.Slice(ks.Windows, func(i, j int) bool { return ks.Windows[i].Index < ks.Windows[j].Index })
	return ks
}
