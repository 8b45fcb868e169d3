package swarm

import (
	"log/slog"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// runEnv is what every role of one run in one process shares.
type runEnv struct {
	st    *board.Store
	run   *layout.Record
	clock board.Clock
	log   *slog.Logger
	host  string
}
