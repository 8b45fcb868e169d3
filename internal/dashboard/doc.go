// Package dashboard is apiary's web UI and the data behind `apiary top`:
// what runs, what is stuck, what was rejected and why, what it costs — and
// the buttons to act: cancel a task or a run, approve or reject a
// resolution hint, approve or deny an escrowed operation.
//
// The page is served by the binary from embedded assets (no CDN, no
// external requests; a strict Content-Security-Policy), on localhost by
// default. It shows the runs, local and swarm alike; a run's DAG (layered,
// wide layers wrapped) with live status, live wall times and the critical
// path; why each failed task failed, inline (Failure: the failing check's
// last lines, the gate's file and line); a task's envelope, receipt, gate
// results, diff stat, log tail, tokens, dollars (Usage.Known false is
// "n/a", never $0), lease and fencing token; a "needs you" banner for
// pending escrow requests, hints and escalated reviews; workers and
// claims; the gateway (queue depth including the requests waiting on a
// rate window, each limit and its period, refusals by kind, budgets left
// per key, a wall-clock chart, tokens and dollars per agent); conflicts
// and hints; and the simulator's and evaluations' plots, one file per
// chart. Panels without data collapse; it fits a 420 px screen.
//
// The package imports none of the packages that hold that state. It
// declares the small interfaces it reads and acts through (RunSource,
// GatewaySource, BoardSource, EscrowSource, ReviewSource, PlotSource;
// Canceller, HintReviewer, EscrowDecider) and the command line passes the
// real values; any of them may be nil, and the page then leaves that part
// out and says it is not connected. GatewayClient reads a gateway over
// HTTP; PlotDirs finds plot files on disk.
//
// # HTTP interface
//
//	GET  /                                  the page (and /assets/...)
//	GET  /api/runs                          []RunSummary
//	GET  /api/runs/{run}                    Run, with its Graph laid out
//	GET  /api/runs/{run}/tasks/{task}       TaskDetail
//	GET  /api/gateway                       GatewayView (snapshot and history)
//	GET  /api/gateway/chart.svg?upstream=U  the concurrency chart (internal/plot)
//	GET  /api/board                         BoardSnapshot
//	GET  /api/escrow                        []EscrowRequest
//	GET  /api/reviews                       []Escalated
//	GET  /api/plots, /api/plots/{name}      plots found on disk
//	GET  /api/stream?run=R&task=T           text/event-stream of the above
//	GET  /metrics                           Prometheus, when configured
//	POST /api/runs/{run}/cancel             cancel a run
//	POST /api/runs/{run}/tasks/{task}/cancel  cancel a task and its subtree
//	POST /api/hints/{type}/approve|reject   review a resolution hint
//	POST /api/escrow/{id}/approve|deny      decide an escrowed operation
//
// The stream sends an event per topic (runs, run, task, gateway, board,
// escrow, reviews) whose data is the same JSON as the GET endpoint,
// whenever it changed: at once after Server.Notify, else within
// Config.Interval. When the server stops it sends the last state and an
// "end" event, and the page keeps showing it.
// Actions are POSTs with a JSON body ({"note": "...", "reason": "..."})
// and the header X-Apiary-Dashboard: 1; requests whose Host is not the
// dashboard's own (DNS rebinding) or whose Origin is another site are
// refused, so a web page elsewhere cannot drive them.
package dashboard

import "errors"

// Sentinel errors. Sources wrap them so the dashboard can answer with the
// right status; test with errors.Is.
var (
	// ErrNotFound: no such run, task, hint, escrow request or plot (404).
	ErrNotFound = errors.New("dashboard: not found")
	// ErrConflict: the action does not apply in the current state — a
	// hint already reviewed, a task already finished (409).
	ErrConflict = errors.New("dashboard: conflict")
	// ErrUnavailable: that part is not connected (501).
	ErrUnavailable = errors.New("dashboard: not connected")
	// ErrInvalid: a bad request or configuration (400).
	ErrInvalid = errors.New("dashboard: invalid")
)
