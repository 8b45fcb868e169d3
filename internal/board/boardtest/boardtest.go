// Package boardtest is the conformance suite every board backend passes:
// exclusive claims under concurrency, strictly increasing fencing tokens,
// leases that expire and take their keys along, compare-and-swap, watches
// that resume without gaps or repeats under concurrent writers, elections
// with failover, intents and hint reviews. It is imported only from _test.go
// files.
package boardtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// Harness describes the backend under test.
type Harness struct {
	// NewBoard creates a fresh, empty board for one case (inside the case's
	// bubble, if any) and returns a function that opens a client on it.
	// Each client is independent — its own leases and keep-alives, like a
	// separate process — and is closed by a t.Cleanup that NewBoard
	// registers (the suite may close one earlier to simulate a crash).
	NewBoard func(t *testing.T) (connect func() *board.Store)
	// Bubble, if set, runs each case; a backend on an injected clock passes
	// synctest.Test so that leases expire in virtual time.
	Bubble func(t *testing.T, f func(*testing.T))
	// TTL is the shortest lease TTL the backend honours faithfully; the
	// expiry cases wait a few of them. Default 1s.
	TTL time.Duration
	// Timeout bounds each wait for an event; default 30s.
	Timeout time.Duration
}

// env is what a case receives.
type env struct {
	connect func() *board.Store
	ttl     time.Duration
	timeout time.Duration
}

// ctx returns a context bounded by the harness timeout.
func (e *env) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), e.timeout)
	t.Cleanup(cancel)
	return ctx
}

type tcase struct {
	name string
	run  func(t *testing.T, e *env)
}

// Run runs every case, in parallel, each on a fresh board; then the cases
// that disturb the whole backend (compaction) one at a time.
func Run(t *testing.T, h Harness) {
	if h.TTL <= 0 {
		h.TTL = time.Second
	}
	if h.Timeout <= 0 {
		h.Timeout = 30 * time.Second
	}
	bubble := h.Bubble
	if bubble == nil {
		bubble = func(t *testing.T, f func(*testing.T)) { f(t) }
	}
	runCase := func(t *testing.T, c tcase) {
		bubble(t, func(t *testing.T) {
			c.run(t, &env{connect: h.NewBoard(t), ttl: h.TTL, timeout: h.Timeout})
		})
	}
	t.Run("parallel", func(t *testing.T) {
		for _, c := range parallelCases() {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				runCase(t, c)
			})
		}
	})
	for _, c := range serialCases() {
		t.Run(c.name, func(t *testing.T) { runCase(t, c) })
	}
}

func parallelCases() []tcase {
	return []tcase{
		{"KV", testKV},
		{"CAS", testCAS},
		{"Txn", testTxn},
		{"Invalid", testInvalid},
		{"LeaseRevoke", testLeaseRevoke},
		{"LeaseExpiry", testLeaseExpiry},
		{"SessionKeepsAlive", testSessionKeepsAlive},
		{"ClaimExclusive", testClaimExclusive},
		{"FencingMonotonic", testFencingMonotonic},
		{"ClaimExpiry", testClaimExpiry},
		{"WatchResume", testWatchResume},
		{"WatchFromNow", testWatchFromNow},
		{"WatchClosed", testWatchClosed},
		{"ElectionOneLeader", testElectionOneLeader},
		{"ElectionFailover", testElectionFailover},
		{"ElectionCancel", testElectionCancel},
		{"Tasks", testTasks},
		{"Intents", testIntents},
		{"Hints", testHints},
		{"Quota", testQuota},
		{"ClaimOnExclusive", testClaimOnExclusive},
		{"ClaimOnBatch", testClaimOnBatch},
		{"ClaimOnExpiry", testClaimOnExpiry},
		{"ClaimOnInvalid", testClaimOnInvalid},
		{"TxnLimit", testTxnLimit},
		{"WatchFilter", testWatchFilter},
	}
}

func serialCases() []tcase {
	return []tcase{
		{"Compaction", testCompaction},
	}
}

// must(f())(t) fails the test if f returned an error, else returns f's value.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

// wantErr fails unless err matches target.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// awaitEvent reads ch until an event satisfies pred, failing on an error
// response, a closed channel or ctx's end. It returns the matching event and
// every event read.
func awaitEvent(t *testing.T, ctx context.Context, ch <-chan board.WatchResponse, pred func(board.Event) bool) (board.Event, []board.Event) {
	t.Helper()
	var seen []board.Event
	for {
		select {
		case resp, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed before the awaited event (saw %d events)", len(seen))
			}
			if resp.Err != nil {
				t.Fatalf("watch failed before the awaited event: %v", resp.Err)
			}
			for _, ev := range resp.Events {
				seen = append(seen, ev)
				if pred(ev) {
					return ev, seen
				}
			}
		case <-ctx.Done():
			t.Fatalf("no awaited event before %v (saw %d events)", ctx.Err(), len(seen))
		}
	}
}

func isDelete(key string) func(board.Event) bool {
	return func(ev board.Event) bool { return ev.Type == board.EventDelete && ev.Key == key }
}
