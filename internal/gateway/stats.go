package gateway

import (
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/apiary-dev/apiary/internal/sched"
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
	ConcurrencyLimit int             `json:"concurrency_limit"`
	Breaker          string          `json:"breaker"`
	RateLimits       []DimensionStat `json:"rate_limits"`
	OutputEstimate   int64           `json:"output_estimate_tokens"`
	Agents           map[string]int  `json:"agents_in_flight,omitempty"`
}

// DimensionStat is one rate-limit dimension.
type DimensionStat struct {
	Dim         string    `json:"dim"`
	Limit       int64     `json:"limit"`
	Available   float64   `json:"available"`
	PausedUntil time.Time `json:"paused_until,omitzero"`
}

var dims = []struct {
	dim  sched.Dim
	name string
}{{sched.Requests, "requests"}, {sched.InputTokens, "input_tokens"}, {sched.OutputTokens, "output_tokens"}, {sched.TotalTokens, "tokens"}}

// Stats returns a snapshot of every upstream's state and the budgets.
func (g *Gateway) Stats() Stats {
	now := g.now()
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
		for _, d := range dims {
			bs := up.limiter.Load().Stats(d.dim, now)
			if bs.Limit == 0 {
				continue
			}
			us.RateLimits = append(us.RateLimits, DimensionStat{Dim: d.name, Limit: bs.Limit, Available: bs.Available, PausedUntil: bs.PausedUntil})
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
