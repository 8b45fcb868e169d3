package dashboard

import (
	"context"
	"net/http"
)

// RunSource reads runs (the runtime's files on disk). Errors wrap
// ErrNotFound for an unknown run or task. Implementations must be safe for
// concurrent use.
type RunSource interface {
	// Runs lists the runs, oldest first.
	Runs(ctx context.Context) ([]RunSummary, error)
	// Run returns one run with its dependency edges (Graph is left nil).
	Run(ctx context.Context, id string) (*Run, error)
	// Task returns everything about one task of a run.
	Task(ctx context.Context, run, task string) (*TaskDetail, error)
}

// Canceller cancels a task and its subtree, or (task "") a whole run. The
// run may belong to another process. Errors wrap ErrNotFound, or
// ErrConflict when there is nothing left to cancel.
type Canceller interface {
	Cancel(ctx context.Context, run, task, reason string) error
}

// GatewaySource reads the gateway's state.
type GatewaySource interface {
	Gateway(ctx context.Context) (GatewaySnapshot, error)
}

// BoardSource reads the coordination board.
type BoardSource interface {
	Board(ctx context.Context) (BoardSnapshot, error)
}

// HintReviewer reviews the resolution hint of a conflict type. Errors wrap
// ErrNotFound, or ErrConflict when the hint is no longer pending.
type HintReviewer interface {
	ApproveHint(ctx context.Context, typ, reviewer, note string) error
	RejectHint(ctx context.Context, typ, reviewer, note string) error
}

// EscrowSource lists escrow requests, pending and decided.
type EscrowSource interface {
	Escrow(ctx context.Context) ([]EscrowRequest, error)
}

// EscrowDecider decides an escrow request. Errors wrap ErrNotFound, or
// ErrConflict when it was already decided.
type EscrowDecider interface {
	ApproveEscrow(ctx context.Context, id, reviewer, note string) error
	DenyEscrow(ctx context.Context, id, reviewer, note string) error
}

// ReviewSource lists the reviews escalated to a person and not yet
// resolved (`apiary review resolve`).
type ReviewSource interface {
	Escalated(ctx context.Context) ([]Escalated, error)
}

// PlotSource lists and opens chart files.
type PlotSource interface {
	Plots(ctx context.Context) ([]Plot, error)
	// Plot returns the file's bytes and its content type; ErrNotFound for
	// an unknown name.
	Plot(ctx context.Context, name string) ([]byte, string, error)
}

// Sources are what the dashboard reads and acts through; every field may
// be nil, and the page shows that part as not connected.
type Sources struct {
	Runs    RunSource
	Cancel  Canceller
	Gateway GatewaySource
	Board   BoardSource
	Hints   HintReviewer
	Escrow  EscrowSource
	Decide  EscrowDecider
	Plots   PlotSource
	Reviews ReviewSource
	// Metrics, if set, is served at /metrics (a Prometheus handler).
	Metrics http.Handler
}
