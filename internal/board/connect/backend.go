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

// OpenMetered opens the board dsn names like Open, with every call counted
// by the returned Meter.
func OpenMetered(ctx context.Context, dsn string, opts Options) (*board.Store, *board.Meter, error) {
	d, err := board.ParseDSN(dsn)
	if err != nil {
		return nil, nil, err
	}
	var b board.Backend
	switch d.Kind {
	case board.KindLocal:
		if err := os.MkdirAll(filepath.Dir(d.Path), 0o755); err != nil {
			return nil, nil, fmt.Errorf("board %s: %w", dsn, err)
		}
		b, err = local.OpenBackend(ctx, d.Path, local.Options{Clock: opts.Clock})
	case board.KindEtcd:
		b, err = etcd.OpenBackend(ctx, d.Endpoints, etcd.Options{Prefix: d.Prefix, Clock: opts.Clock})
	default:
		err = fmt.Errorf("board %s: unknown kind %q: %w", dsn, d.Kind, board.ErrInvalid)
	}
	if err != nil {
		return nil, nil, err
	}
	m := board.NewMeter(b)
	return board.New(m, board.Options{Clock: opts.Clock}), m, nil
}
