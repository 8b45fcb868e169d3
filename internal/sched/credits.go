package sched

import (
	"context"
	"sync"
)

// Credits is credit-based flow control between a producer and its
// consumers: consumers Grant credits as they make room, the producer Acquires
// one per emission and blocks at zero. Waiting producers are served in
// arrival order. The zero value has no credits and is ready to use.
//
// Credits is safe for concurrent use.
type Credits struct {
	mu     sync.Mutex
	n      int64
	closed bool
	head   *creditWaiter
	tail   *creditWaiter
}

type creditWaiter struct {
	ready      chan struct{} // closed on grant or Close
	granted    bool
	prev, next *creditWaiter
}

// NewCredits returns Credits holding n credits (negative means 0).
func NewCredits(n int64) *Credits {
	return &Credits{n: max(n, 0)}
}

// Grant adds n credits, waking waiters in order. It does nothing if n <= 0
// or after Close.
func (c *Credits) Grant(n int64) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.n += n
	c.handOff()
}

// Acquire takes one credit, waiting while there is none. It returns
// ErrClosed once Close has been called (even if credits remain) and
// context.Cause(ctx) if ctx ends first; a credit granted to a waiter whose
// ctx ended at the same moment passes on to the next waiter.
func (c *Credits) Acquire(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if c.n > 0 && c.head == nil {
		c.n--
		c.mu.Unlock()
		return nil
	}
	w := &creditWaiter{ready: make(chan struct{}), prev: c.tail}
	if c.tail == nil {
		c.head = w
	} else {
		c.tail.next = w
	}
	c.tail = w
	c.mu.Unlock()

	select {
	case <-w.ready:
		if w.granted {
			return nil
		}
		return ErrClosed
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-w.ready:
		if w.granted { // granted as ctx ended: pass the credit on
			c.n++
			c.handOff()
		}
	default:
		c.unlink(w)
	}
	return context.Cause(ctx)
}

// Close fails every waiting and future Acquire with ErrClosed.
func (c *Credits) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	for w := c.head; w != nil; w = w.next {
		close(w.ready)
	}
	c.head, c.tail = nil, nil
}

// Available returns the credits not yet taken.
func (c *Credits) Available() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// handOff gives credits to waiters in order. Called with the lock.
func (c *Credits) handOff() {
	for c.n > 0 && c.head != nil {
		w := c.head
		c.unlink(w)
		c.n--
		w.granted = true
		close(w.ready)
	}
}

func (c *Credits) unlink(w *creditWaiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		c.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		c.tail = w.prev
	}
	w.prev, w.next = nil, nil
}
