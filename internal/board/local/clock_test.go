package local

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// manualClock is a board.Clock that moves only when told to.
type manualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []manualWaiter
}

type manualWaiter struct {
	at time.Time
	ch chan time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, manualWaiter{at: c.now.Add(d), ch: ch})
	return ch
}

// Advance moves the clock forward and fires every timer now due.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
		} else {
			w.ch <- c.now
		}
	}
	c.waiters = kept
}

// TestInjectedClock drives lease expiry with a clock the test moves by hand
// (as the simulator would), outside any synctest bubble: nothing expires
// before the deadline however much real time passes, and the reaper
// removes the lease's keys once the clock passes it.
func TestInjectedClock(t *testing.T) {
	t.Parallel()
	clock := &manualClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "state.db"), Options{Clock: clock, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := s.Claim(ctx, "task", "w", 1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	watch := s.Watch(ctx, board.PrefixClaims, c.Token+1)

	clock.Advance(9 * time.Second)
	if err := s.Renew(ctx, c.Lease); err != nil {
		t.Fatalf("Renew at 9s of a 10s lease: %v", err)
	}
	clock.Advance(9 * time.Second) // 18s: alive only because of the renewal
	if _, err := s.Claim(ctx, "task", "other", 1, time.Second); !errorsIs(err, board.ErrClaimed) {
		t.Fatalf("Claim at 18s after a renewal at 9s: %v, want ErrClaimed", err)
	}
	clock.Advance(2 * time.Second) // 20s: past the renewed deadline of 19s
	select {
	case resp := <-watch:
		if resp.Err != nil || len(resp.Events) != 1 || resp.Events[0].Type != board.EventDelete {
			t.Fatalf("after the deadline: %+v, want the claim's deletion", resp)
		}
	case <-ctx.Done():
		t.Fatal("the reaper did not expire the lease")
	}
	if err := s.Renew(ctx, c.Lease); !errorsIs(err, board.ErrLeaseExpired) {
		t.Fatalf("Renew after expiry: %v, want ErrLeaseExpired", err)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
