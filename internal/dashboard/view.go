package dashboard

import (
	"context"
	"errors"
	"time"
)

// View is everything the dashboard shows at one time, gathered in one go
// for a terminal (`apiary top`). A part whose source is missing or failed
// is nil, with the reason in its ...Error field ("" when not connected).
type View struct {
	Time       time.Time        `json:"time"`
	Runs       []RunSummary     `json:"runs"`
	RunsError  string           `json:"runs_error,omitempty"`
	Run        *Run             `json:"run,omitempty"`
	RunError   string           `json:"run_error,omitempty"`
	Gateway    *GatewaySnapshot `json:"gateway,omitempty"`
	GatewayErr string           `json:"gateway_error,omitempty"`
	Board      *BoardSnapshot   `json:"board,omitempty"`
	BoardError string           `json:"board_error,omitempty"`
	Escrow     []EscrowRequest  `json:"escrow,omitempty"`
	EscrowErr  string           `json:"escrow_error,omitempty"`
	Reviews    []Escalated      `json:"reviews,omitempty"`
}

// Collect gathers a View from src at now: the runs (newest first), run id
// (the newest when "") with its graph, the gateway, the board and the
// escrow queue. It fails only when ctx ends.
func Collect(ctx context.Context, src Sources, run string, now time.Time) (*View, error) {
	s := &Server{src: src}
	v := &View{Time: now}
	msg := func(err error) string {
		if errors.Is(err, ErrUnavailable) {
			return ""
		}
		return err.Error()
	}
	var err error
	if v.Runs, err = s.runs(ctx); err != nil {
		v.Runs, v.RunsError = nil, msg(err)
	}
	if run == "" && len(v.Runs) > 0 {
		run = v.Runs[0].ID
	}
	if run != "" {
		if v.Run, err = s.run(ctx, run); err != nil {
			v.RunError = msg(err)
		}
	}
	if src.Gateway != nil {
		snap, err := src.Gateway.Gateway(ctx)
		if err != nil {
			v.GatewayErr = err.Error()
		} else {
			snap.Time = now
			v.Gateway = &snap
		}
	}
	if v.Board, err = s.board(ctx); err != nil {
		v.BoardError = msg(err)
	}
	if v.Escrow, err = s.escrow(ctx); err != nil {
		v.Escrow, v.EscrowErr = nil, msg(err)
	}
	if v.Reviews, err = s.reviews(ctx); err != nil {
		v.Reviews = nil
	}
	return v, ctx.Err()
}
