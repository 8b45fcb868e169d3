package runview

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/dashboard"
)

// OptionError is a source named wrongly (a directory that is not one, a
// URL that is not a gateway's, a board DSN that does not parse); the
// message names the flag.
type OptionError struct{ Msg string }

func (e *OptionError) Error() string { return e.Msg }

// ErrNothing is Open's error when it has nothing to show.
var ErrNothing = errors.New("nothing to show: not in a git repository, and no --gateway or --board")

// OpenOptions name what the dashboard and apiary top read.
type OpenOptions struct {
	// Root is the repository's top level, "" outside one.
	Root string
	// Gateway is the base URL of a running gateway, "" for none.
	Gateway string
	// Board is the board's DSN; "" is the repository's local board when
	// it exists.
	Board string
	// Plots are directories of plots besides the repository's.
	Plots []string
	// Ledger, if set, is the run gateway's ledger of this process, read
	// instead of the file at LedgerPath (the repository's run gateway
	// ledger; "" for none).
	Ledger     *Ledger
	LedgerPath string
}

// Open opens what o names and adapts it to the dashboard's sources.
// Nothing is created: a board or a ledger that does not exist is not shown
// (a Board that names a missing local file is an error). close closes
// what was opened.
func Open(ctx context.Context, o OpenOptions) (src dashboard.Sources, close func(), err error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	for _, d := range o.Plots {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return src, closeAll, &OptionError{fmt.Sprintf("--plots %s: not a directory", d)}
		}
	}
	cfg := Config{Root: o.Root, Ledger: o.Ledger, Plots: o.Plots}
	if o.Gateway != "" {
		if u, err := url.Parse(o.Gateway); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return src, closeAll, &OptionError{fmt.Sprintf("--gateway %q: want the gateway's base URL, like http://127.0.0.1:7420", o.Gateway)}
		}
		cfg.Gateway = &dashboard.GatewayClient{URL: o.Gateway}
	}
	dsn := o.Board
	if dsn == "" && o.Root != "" {
		dsn = DefaultBoardDSN(o.Root)
	}
	if dsn != "" {
		if cfg.Board, err = OpenBoard(ctx, dsn); err != nil {
			return src, closeAll, err
		}
		closers = append(closers, func() { cfg.Board.Close() })
	}
	if cfg.Ledger == nil && o.LedgerPath != "" {
		cfg.Ledger = NewLedger(o.LedgerPath)
		closers = append(closers, func() { cfg.Ledger.Close() })
	}
	if o.Root == "" && cfg.Gateway == nil && cfg.Board == nil {
		closeAll()
		return src, func() {}, ErrNothing
	}
	return Sources(cfg), closeAll, nil
}

// OpenBoard opens the board dsn names for reading: a local board must
// already exist (opening one creates it).
func OpenBoard(ctx context.Context, dsn string) (*board.Store, error) {
	d, err := board.ParseDSN(dsn)
	if err != nil {
		return nil, &OptionError{fmt.Sprintf("--board: %v", err)}
	}
	if d.Kind == board.KindLocal {
		if _, err := os.Stat(d.Path); err != nil {
			return nil, fmt.Errorf("no board at %s (a local board is created by the first swarm run or worker that uses it)", d.Path)
		}
	}
	st, err := connect.Open(ctx, dsn, connect.Options{})
	if err != nil {
		return nil, fmt.Errorf("board %s: %w", dsn, err)
	}
	return st, nil
}
