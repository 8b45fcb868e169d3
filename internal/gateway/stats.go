package gateway

import (
	"encoding/json"
	"net/http"
	"sort"
	"time"
)

// Stats is the gateway's state as GET /_apiary/stats reports it.
type Stats struct {
	Upstreams []UpstreamStats `json:"upstreams"`
	Budgets   []BudgetStatus  `json:"budgets"`
}

// UpstreamStats describes one upstream's scheduling state.
type UpstreamStats struct {
	Name             string          `json:"name"`
	URL              string          `json:"url"`
	InFlight         int             `json:"in_flight"`
	Queued           int             `json:"queued"`
	Pacing           int             `json:"pacing"` // waiting for the rate limits
	ConcurrencyLimit int             `json:"concurrency_limit"`
	Breaker          string          `json:"breaker"`
	RateLimits       []DimensionStat `json:"rate_limits"`
	OutputEstimate   int64           `json:"output_estimate_tokens"`
	Agents           map[string]int  `json:"agents_in_flight,omitempty"`
}

// DimensionStat is one rate-limit dimension: its limit and period, and
// where each came from (configured, learned from the server's headers, or
// assumed).
type DimensionStat struct {
	Dim          string  `json:"dim"`
	Limit        int64   `json:"limit"`
	Source       string  `json:"source"`
	PeriodS      float64 `json:"period_s,omitempty"`
	PeriodSource string  `json:"period_source,omitempty"`
	// Available is the limit less the model's count in the current window.
	Available float64 `json:"available"`
	InFlight  float64 `json:"in_flight"`
	// ResetAt is when the model will next admit a full window (the late end
	// of the interval the current window's end lies in), ResetUncertaintyMS
	// that interval's width.
	ResetAt            time.Time `json:"reset_at,omitzero"`
	ResetUncertaintyMS int64     `json:"reset_uncertainty_ms,omitempty"`
	// Kind is window (fixed windows) or bucket (found to refill
	// continuously, at RefillPerSecond at least).
	Kind            string  `json:"kind"`
	RefillPerSecond float64 `json:"refill_per_s,omitempty"`
}

// Stats returns a snapshot of every upstream's state and the budgets.
func (g *Gateway) Stats() Stats {
	var s Stats
	for _, up := range g.upstreams {
		us := UpstreamStats{Name: up.name, URL: up.url.String(), Breaker: "disabled", OutputEstimate: up.outputReservation(0)}
		if up.gate != nil {
			gs := up.gate.Stats()
			us.InFlight, us.Queued, us.ConcurrencyLimit = gs.InFlight, gs.Queued, gs.Limit
			for name, a := range gs.Agents {
				if a.InFlight > 0 {
					if us.Agents == nil {
						us.Agents = map[string]int{}
					}
					us.Agents[name] = a.InFlight
				}
			}
			g.metrics.queued.WithLabelValues(up.name).Set(float64(gs.Queued))
		}
		if up.breaker != nil {
			us.Breaker = up.breaker.State().String()
		}
		us.Pacing = up.pacer.Waiting()
		for _, ls := range up.pacer.Stats() {
			us.RateLimits = append(us.RateLimits, DimensionStat{Dim: ls.Dim.String(), Limit: ls.Limit, Source: ls.Source.String(),
				PeriodS: ls.Period.Seconds(), PeriodSource: ls.PeriodSource.String(), Available: float64(ls.Limit) - ls.Used,
				InFlight: ls.InFlight, ResetAt: ls.ResetAt, ResetUncertaintyMS: ls.ResetUncertainty.Milliseconds(),
				Kind: map[bool]string{false: "window", true: "bucket"}[ls.Continuous], RefillPerSecond: ls.RefillPerSecond})
		}
		s.Upstreams = append(s.Upstreams, us)
	}
	s.Budgets = g.budgets.status()
	sort.Slice(s.Budgets, func(i, j int) bool {
		return s.Budgets[i].Scope+s.Budgets[i].Unit < s.Budgets[j].Scope+s.Budgets[j].Unit
	})
	return s
}

func (g *Gateway) serveStats(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(g.Stats())
}
