//go:build !unix

package swarm

import (
	"errors"
	"testing"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/proc"
)

// TestHostRefusedHere: where processes cannot be contained, a host that
// would run agents (a GitExecutor) or merge (checks) refuses before it
// touches the board.
func TestHostRefusedHere(t *testing.T) {
	for name, cfg := range map[string]HostConfig{
		"worker": {Store: new(board.Store), Workers: []WorkerSpec{{ID: "w"}}, Exec: &GitExecutor{}},
		"merge":  {Store: new(board.Store), Host: "h", Merge: &MergeConfig{Dir: t.TempDir()}},
	} {
		if err := RunHost(t.Context(), cfg); !errors.Is(err, proc.ErrUnsupported) {
			t.Errorf("%s: %v, want proc.ErrUnsupported", name, err)
		}
	}
}
