package supervise

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestLeaseLifecycle: fences grow monotonically from the restored value;
// renewal extends a lease; an unrenewed one lapses at exactly its TTL and is
// stale from then on; Seal keeps one speculative lease and ends the rest;
// a pinned lease never lapses.
func TestLeaseLifecycle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := NewLeases(time.Now, 41)
		a, err := l.Grant("t", "attempt 1", 10*time.Second)
		if err != nil || a.Fence != 42 {
			t.Fatalf("first fence %d, %v", a.Fence, err)
		}
		b, _ := l.Grant("t", "attempt 2", 10*time.Second)
		c, _ := l.Grant("u", "u1", 10*time.Second)
		if b.Fence != 43 || c.Fence != 44 || l.LastFence() != 44 {
			t.Fatalf("fences %d %d last %d", b.Fence, c.Fence, l.LastFence())
		}
		time.Sleep(6 * time.Second)
		if _, err := l.Renew("t", a.Fence); err != nil {
			t.Fatal(err)
		}
		if err := l.Pin("u", c.Fence); err != nil {
			t.Fatal(err)
		}
		time.Sleep(4 * time.Second) // b (not renewed) is at its TTL
		if err := l.Check("t", b.Fence); !errors.Is(err, ErrLapsed) {
			t.Errorf("b after its TTL: %v", err)
		}
		if got := l.Expired(); len(got) != 1 || got[0].Fence != b.Fence {
			t.Errorf("Expired = %+v, want b", got)
		}
		if err := l.Check("t", b.Fence); !errors.Is(err, ErrStaleFence) {
			t.Errorf("b after lapsing: %v", err)
		}
		if err := l.Check("t", a.Fence); err != nil {
			t.Errorf("renewed a: %v", err)
		}
		time.Sleep(time.Hour)
		if err := l.Check("u", c.Fence); err != nil {
			t.Errorf("pinned c lapsed: %v", err)
		}
		if got := l.Expired(); len(got) != 1 || got[0].Fence != a.Fence {
			t.Errorf("Expired = %+v", got)
		}
		d, _ := l.Grant("v", "v1", time.Minute)
		e, _ := l.Grant("v", "v2", time.Minute)
		if ended := l.Seal("v", e.Fence); len(ended) != 1 || ended[0].Fence != d.Fence {
			t.Errorf("Seal ended %+v", ended)
		}
		if err := l.Check("v", d.Fence); !errors.Is(err, ErrStaleFence) {
			t.Errorf("sealed-out fence: %v", err)
		}
		l.Release("v", e.Fence)
		if err := l.Check("v", e.Fence); !errors.Is(err, ErrStaleFence) || len(l.Live("v")) != 0 {
			t.Errorf("released fence: %v", err)
		}
		if _, err := l.Grant("w", "", 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("zero TTL: %v", err)
		}
	})
}

// TestLeaseHeartbeatAndWatch: a heartbeat keeps a lease alive for as long as
// its holder is alive; once the holder stops (alive false) the lease lapses
// one TTL after the last renewal, Watch reports it exactly once, and the
// heartbeat ends with ErrLapsed/ErrStaleFence.
func TestLeaseHeartbeatAndWatch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		l := NewLeases(time.Now, 0)
		start := time.Now()
		ls, _ := l.Grant("task", "worker", 30*time.Second)
		var stopped atomic.Bool
		var lapses []Lease
		var lapseAt time.Time
		var mu sync.Mutex
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			l.Watch(ctx, func(x Lease) {
				mu.Lock()
				lapses = append(lapses, x)
				lapseAt = time.Now()
				mu.Unlock()
			})
		}()
		hbErr := make(chan error, 1)
		go func() {
			defer wg.Done()
			hbErr <- l.Heartbeat(ctx, "task", ls.Fence, 5*time.Second, func() bool { return !stopped.Load() })
		}()
		time.Sleep(2 * time.Minute) // many TTLs: the heartbeat keeps it
		synctest.Wait()
		mu.Lock()
		n := len(lapses)
		mu.Unlock()
		if n != 0 {
			t.Fatalf("lapsed while renewed: %+v", lapses)
		}
		// The last renewal was at 2m (beats every 5 s); the holder stops now.
		stopped.Store(true)
		err := <-hbErr
		if !errors.Is(err, ErrLapsed) && !errors.Is(err, ErrStaleFence) {
			t.Errorf("heartbeat ended with %v", err)
		}
		// The heartbeat may see the lapse at the very instant the watcher
		// is woken for it: let the watcher run before stopping it.
		synctest.Wait()
		cancel()
		wg.Wait()
		if len(lapses) != 1 || lapses[0].Fence != ls.Fence {
			t.Fatalf("lapses %+v", lapses)
		}
		if got := lapseAt.Sub(start); got != 2*time.Minute+30*time.Second {
			t.Errorf("lapsed at +%s, want +2m30s", got)
		}
	})
}
