package local

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/boardtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConformance runs the board conformance suite on SQLite, each case in a
// synctest bubble so leases expire on virtual time. Each client is a
// separate Store (own connections, reaper and keep-alives) on one file, as
// separate processes would be.
func TestConformance(t *testing.T) {
	t.Parallel()
	boardtest.Run(t, boardtest.Harness{
		Bubble: synctest.Test,
		NewBoard: func(t *testing.T) func() *board.Store {
			path := filepath.Join(t.TempDir(), "state.db")
			return func() *board.Store {
				s, err := Open(t.Context(), path, Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		},
	})
}

// TestWatchHistory reads a history longer than one read of the event log
// (watchBatch revisions), from the start and from the middle of a batch:
// every event once, in order.
func TestWatchHistory(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, err := Open(t.Context(), filepath.Join(t.TempDir(), "state.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		const n = 2*watchBatch + 37
		var revs []int64
		for i := range n {
			key := "h/" + strconv.Itoa(i%7)
			if i%3 == 2 {
				key = "other/" + strconv.Itoa(i) // not under the watched prefix
			}
			rev, err := s.Put(ctx, key, []byte(strconv.Itoa(i)), board.NoLease)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(key, "other/") {
				revs = append(revs, rev)
			}
		}
		for _, start := range []int{0, watchBatch / 2, len(revs) - 1} {
			wctx, cancel := context.WithCancel(ctx)
			var got []int64
			for resp := range s.Watch(wctx, "h/", revs[start]) {
				if resp.Err != nil {
					t.Fatal(resp.Err)
				}
				for _, ev := range resp.Events {
					got = append(got, ev.Revision)
				}
				if len(got) >= len(revs)-start {
					break
				}
			}
			cancel()
			if !slices.Equal(got, revs[start:]) {
				t.Fatalf("watch from %d: %d events, want %d (%v...)", revs[start], len(got), len(revs)-start, got[:min(len(got), 5)])
			}
		}
	})
}
