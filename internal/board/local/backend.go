package local

import (
	"context"

	"github.com/apiary-dev/apiary/internal/board"
)

// OpenBackend opens the database at path like Open but returns the bare
// Backend, for a caller that wraps it (in a board.Meter, say) before
// building the Store with board.New. Give board.New the same Clock as opts.
func OpenBackend(ctx context.Context, path string, opts Options) (board.Backend, error) {
	return open(ctx, path, opts)
}
