// Package connect opens a board from its DSN ("local:PATH" or
// "etcd://HOST:PORT[,HOST:PORT...][/PREFIX]", see board.ParseDSN), choosing
// the backend. It exists apart from board because the backends import board.
package connect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/etcd"
	"github.com/apiary-dev/apiary/internal/board/local"
)

// Options configures Open. The zero value is usable.
type Options struct {
	// Clock drives leases (local) and keep-alives; nil means the system clock.
	Clock board.Clock
}

// Open parses dsn and opens the board it names. A local board's directory is
// created if missing (".apiary/" for the default path).
func Open(ctx context.Context, dsn string, opts Options) (*board.Store, error) {
	d, err := board.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	switch d.Kind {
	case board.KindLocal:
		if err := os.MkdirAll(filepath.Dir(d.Path), 0o755); err != nil {
			return nil, fmt.Errorf("board %s: %w", dsn, err)
		}
		return local.Open(ctx, d.Path, local.Options{Clock: opts.Clock})
	case board.KindEtcd:
		return etcd.Open(ctx, d.Endpoints, etcd.Options{Prefix: d.Prefix, Clock: opts.Clock})
	}
	return nil, fmt.Errorf("board %s: unknown kind %q: %w", dsn, d.Kind, board.ErrInvalid)
}
