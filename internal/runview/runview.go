// Package runview is the read model behind the dashboard and `apiary top`:
// local runs read through rundir and runs, swarm runs and their workers
// from the board, the money from the run gateway's ledger, the escrow
// queue and escalated reviews, adapted to the read interfaces that
// internal/dashboard and internal/tui declare (neither imports a runtime
// package). Reading creates nothing: no board, no ledger, no run state.
package runview

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
	"github.com/apiary-dev/apiary/internal/tui"
)

// Config is what to read. Every field may be empty: what is missing is not
// shown.
type Config struct {
	// Root is the top level of the repository whose runs are shown; ""
	// shows no local runs, escrow or reviews.
	Root string
	// Board, if set, is read for swarm runs, claims, workers, conflicts
	// and hints. The caller owns it.
	Board *board.Store
	// Ledger, if set, is where the runs' money comes from. The caller
	// owns it.
	Ledger *Ledger
	// Gateway, if set, is the gateway panel's source; with a Ledger its
	// budgets are named by the agent each key belongs to.
	Gateway dashboard.GatewaySource
	// Plots are directories of SVG and PNG plots besides the repository's
	// .apiary/plots.
	Plots []string
}

// Sources adapts what cfg names to the dashboard's sources.
func Sources(cfg Config) dashboard.Sources {
	var src dashboard.Sources
	if cfg.Board != nil {
		bv := boardView{st: cfg.Board}
		src.Board, src.Hints = bv, bv
	}
	var dirs dashboard.PlotDirs
	if cfg.Root != "" {
		src.Runs = newRunFiles(cfg.Root, cfg.Board, cfg.Ledger)
		src.Cancel = runControl{root: cfg.Root, now: time.Now}
		q := escrowQueue{q: runs.NewEscrowQueue(cfg.Root, nil)}
		src.Escrow, src.Decide = q, q
		src.Reviews = reviewQueue{root: cfg.Root}
		dirs = append(dirs, rundir.State(cfg.Root, "plots"))
	}
	src.Plots = append(dirs, cfg.Plots...)
	src.Gateway = cfg.Gateway
	if src.Gateway != nil && cfg.Ledger != nil {
		src.Gateway = keyAgents{src: src.Gateway, ledger: cfg.Ledger}
	}
	return src
}

// BoardSources are the dashboard's board panels alone — workers, claims,
// conflicts and resolution hints, with approve and reject — over st (a
// worker's dashboard).
func BoardSources(st *board.Store) dashboard.Sources {
	bv := boardView{st: st}
	return dashboard.Sources{Board: bv, Hints: bv}
}

// DefaultBoardDSN is the DSN of the repository's local board when it
// exists, else "".
func DefaultBoardDSN(root string) string {
	p := filepath.Join(root, board.DefaultLocalPath)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) || err != nil {
		return ""
	}
	return board.KindLocal + ":" + p
}

// TUI is tui.Source over the dashboard's sources.
type TUI struct{ Sources dashboard.Sources }

var _ tui.Source = TUI{}

func (t TUI) View(ctx context.Context, run string) (*dashboard.View, error) {
	return dashboard.Collect(ctx, t.Sources, run, time.Now())
}

func (t TUI) Task(ctx context.Context, run, task string) (*dashboard.TaskDetail, error) {
	if t.Sources.Runs == nil {
		return nil, fmt.Errorf("%w: no run store", dashboard.ErrUnavailable)
	}
	return t.Sources.Runs.Task(ctx, run, task)
}

func (t TUI) Cancel(ctx context.Context, run, task, reason string) error {
	if t.Sources.Cancel == nil {
		return fmt.Errorf("%w: cancelling", dashboard.ErrUnavailable)
	}
	return t.Sources.Cancel.Cancel(ctx, run, task, reason)
}
