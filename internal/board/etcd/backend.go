package etcd

import (
	"context"

	"github.com/apiary-dev/apiary/internal/board"
)

// OpenBackend connects like Open but returns the bare Backend, for a caller
// that wraps it (in a board.Meter, say) before building the Store with
// board.New.
func OpenBackend(ctx context.Context, endpoints []string, opts Options) (board.Backend, error) {
	return open(ctx, endpoints, opts)
}
