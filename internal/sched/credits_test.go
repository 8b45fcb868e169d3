package sched

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestCreditsBlockAtZero(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := NewCredits(2)
		for range 2 {
			if err := c.Acquire(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		var order []int
		var mu sync.Mutex
		done := make(chan struct{}, 3)
		for i := range 3 {
			go func() {
				if err := c.Acquire(t.Context()); err == nil {
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
				}
				done <- struct{}{}
			}()
			synctest.Wait() // queued in this order
		}
		mu.Lock()
		if len(order) != 0 {
			t.Fatalf("acquired at zero credits: %v", order)
		}
		mu.Unlock()
		for range 2 { // one credit at a time shows the order
			c.Grant(1)
			<-done
		}
		mu.Lock()
		if len(order) != 2 || order[0] != 0 || order[1] != 1 {
			t.Fatalf("granted %v, want the first two waiters in order", order)
		}
		mu.Unlock()
		c.Grant(0)
		c.Grant(-5)
		if c.Available() != 0 {
			t.Fatalf("available %d after no-op grants", c.Available())
		}
		c.Close()
		<-done // the third waiter wakes with an error
		if err := c.Acquire(t.Context()); !errors.Is(err, ErrClosed) {
			t.Fatalf("Acquire after Close = %v", err)
		}
		c.Grant(1)
		c.Close()
		if c.Available() != 0 {
			t.Fatal("Grant after Close added credits")
		}
	})
}

func TestCreditsCloseWakesWaiters(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var c Credits // the zero value has no credits
		errc := make(chan error, 2)
		for range 2 {
			go func() { errc <- c.Acquire(t.Context()) }()
		}
		synctest.Wait()
		c.Close()
		for range 2 {
			if err := <-errc; !errors.Is(err, ErrClosed) {
				t.Fatalf("waiter woke with %v, want ErrClosed", err)
			}
		}
	})
}

func TestCreditsCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := NewCredits(0)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := c.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire = %v, want deadline exceeded", err)
		}
		c.Grant(1)
		if c.Available() != 1 {
			t.Fatalf("a cancelled waiter took the credit: %d left", c.Available())
		}
	})
}

// TestCreditsCancelAfterGrant forces the race Acquire resolves: the waiter
// is granted its credit and its context ends before it runs, in both
// orders. Either it keeps the credit or the credit stays available; it is
// never lost.
func TestCreditsCancelAfterGrant(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		for _, cancelFirst := range []bool{false, true} {
			c := NewCredits(0)
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() { errc <- c.Acquire(ctx) }()
			synctest.Wait()
			// No scheduling point between the two: the waiter wakes for
			// whichever came first and finds the other done too.
			if cancelFirst {
				cancel()
				c.Grant(1)
			} else {
				c.Grant(1)
				cancel()
			}
			err := <-errc
			if cancelFirst != (err != nil) {
				t.Fatalf("cancel first %v: Acquire = %v", cancelFirst, err)
			}
			if got := c.Available(); err == nil && got != 0 || err != nil && got != 1 {
				t.Fatalf("Acquire = %v and %d left: the credit was lost or duplicated", err, got)
			}
		}
	})
}

// TestCreditsRace: producers acquire with random cancellations while a
// consumer grants; no credit may be lost or duplicated.
func TestCreditsRace(t *testing.T) {
	t.Parallel()
	const granted = 2000
	c := NewCredits(0)
	var got atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for p := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(p), 5))
			for {
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(3) == 0 {
					go cancel()
				}
				err := c.Acquire(ctx)
				cancel()
				switch {
				case err == nil:
					got.Add(1)
				case errors.Is(err, ErrClosed):
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}
	for range granted {
		c.Grant(1)
	}
	close(stop)
	c.Close()
	wg.Wait()
	if total := got.Load() + c.Available(); total != granted {
		t.Fatalf("acquired %d + left %d = %d, want %d", got.Load(), c.Available(), total, granted)
	}
}
