package dashboard

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/apiary-dev/apiary/internal/plot"
)

// sample reads the gateway once and appends a point per upstream to its
// history, keeping the newest histLen.
func (s *Server) sample(ctx context.Context) {
	snap, err := s.src.Gateway.Gateway(ctx)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			s.gw.Error = err.Error()
		}
		return
	}
	snap.Time = now
	s.gw.Error = ""
	s.gw.Snapshot = &snap
	for _, u := range snap.Upstreams {
		h := append(s.gw.History[u.Name], GatewayPoint{Time: now, InFlight: u.InFlight, Queued: u.Queued, Waiting: snap.Waiting, Limit: u.ConcurrencyLimit})
		if len(h) > s.histLen {
			h = slices.Clone(h[len(h)-s.histLen:])
		}
		s.gw.History[u.Name] = h
	}
}

// gatewayView returns a copy of the gateway panel's state.
func (s *Server) gatewayView() GatewayView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.gw
	v.History = make(map[string][]GatewayPoint, len(s.gw.History))
	for k, h := range s.gw.History {
		v.History[k] = slices.Clone(h)
	}
	if s.gw.Snapshot != nil {
		snap := *s.gw.Snapshot
		v.Snapshot = &snap
	}
	return v
}

// gatewayChart draws an upstream's concurrency limit, requests in flight,
// queued for a slot and waiting on a rate window over the sampled
// history, against the wall clock of loc.
func gatewayChart(upstream string, h []GatewayPoint, loc *time.Location) *plot.Chart {
	xs := make([]float64, len(h))
	limit, inflight, queued, waiting := make([]float64, len(h)), make([]float64, len(h)), make([]float64, len(h)), make([]float64, len(h))
	for i, p := range h {
		xs[i] = float64(p.Time.UnixNano()) / 1e9
		limit[i], inflight[i], queued[i], waiting[i] = float64(p.Limit), float64(p.InFlight), float64(p.Queued), float64(p.Waiting)
	}
	zone, _ := h[len(h)-1].Time.In(loc).Zone()
	return &plot.Chart{Kind: plot.Line, Title: "upstream " + upstream + ": admission over time",
		X: plot.Axis{Label: "time (" + zone + ")", Time: true, Location: loc}, Y: plot.Axis{Label: "requests"},
		Width: 640, Height: 300,
		Series: []plot.Series{
			{Name: "concurrency limit", X: xs, Y: limit},
			{Name: "in flight", X: xs, Y: inflight},
			{Name: "queued for a slot", X: xs, Y: queued},
			{Name: "waiting on a rate window", X: xs, Y: waiting},
		}}
}

func (s *Server) getGatewayChart(w http.ResponseWriter, r *http.Request) {
	v := s.gatewayView()
	up := r.URL.Query().Get("upstream")
	if up == "" && len(v.History) > 0 {
		up = slices.Sorted(maps.Keys(v.History))[0]
	}
	h := v.History[up]
	if len(h) == 0 {
		s.fail(w, r, fmt.Errorf("%w: no samples of upstream %q", ErrNotFound, up))
		return
	}
	svg, err := gatewayChart(up, h, s.loc).SVG()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(svg)
}
