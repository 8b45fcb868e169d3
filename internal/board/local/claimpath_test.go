package local

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/boardtest"
)

// TestClaimPath drains tasks through the claim path of the board's
// primitives (request, ClaimOn for several hosts, done with the release)
// with every host a separate client of one file: every task is worked
// once, and the board sees at most three writes per task.
func TestClaimPath(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	res, err := boardtest.ClaimPath(t.Context(), boardtest.ClaimPathConfig{
		Open: func(ctx context.Context) (*board.Store, func() board.MeterCounts, error) {
			b, err := OpenBackend(ctx, path, Options{})
			if err != nil {
				return nil, nil, err
			}
			m := board.NewMeter(b)
			return board.New(m, board.Options{}), m.Counts, nil
		},
		Hosts: 3, Workers: 8, Prefetch: 2, Tasks: 200, Work: 2 * time.Millisecond, Prefix: "path/",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *res)
	if !res.ExactlyOnce {
		t.Fatal("a task was not worked exactly once")
	}
	if res.WritesPerTask > 3 {
		t.Fatalf("%.2f board writes per task, want at most 3 (%+v)", res.WritesPerTask, res.Counts)
	}
	if res.Counts.Grant != 0 || res.Counts.Revoke != 0 {
		t.Fatalf("leases granted or revoked per task: %+v", res.Counts)
	}
}
