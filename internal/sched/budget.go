package sched

import "sync"

// Budget is a spending limit in int64 units (tokens, or micro-USD). Spending
// is reserved before it happens and settled after, so concurrent requests
// can never overshoot: a reservation fails unless spent + reserved + amount
// fits in the limit.
//
// Budgets form trees for supervision. Child and Carve take a child's whole
// limit out of the parent's remaining capacity; when the child is closed and
// its holds are settled, what it did not spend flows back to the parent. The
// invariant, at every node and at every moment, is spent + reserved + the
// limits of open children <= limit; so the sum of all spending anywhere in a
// tree never exceeds its root's limit.
//
// A whole tree shares one lock. Budget is safe for concurrent use.
type Budget struct {
	mu       *sync.Mutex // the tree's
	parent   *Budget
	limit    int64
	spent    int64 // committed here, plus the spend of settled children
	reserved int64 // outstanding holds
	carved   int64 // limits of unsettled children
	overrun  int64 // usage beyond the limit that could not be charged
	closed   bool
	settled  bool // closed, nothing outstanding, folded into the parent
}

// NewBudget returns a root budget of limit units (negative means 0).
func NewBudget(limit int64) *Budget {
	return &Budget{mu: new(sync.Mutex), limit: max(limit, 0)}
}

// Hold is a reservation against a Budget. Settle it with exactly one of
// Commit or Cancel; later calls are no-ops.
type Hold struct {
	b      *Budget
	amount int64
	done   bool // guarded by the tree's lock
}

// Reserve holds amount units. It fails with an *ExhaustedError (wrapping
// ErrBudgetExhausted) if they do not fit, with ErrClosed after Close, and
// with ErrInvalid if amount is negative.
func (b *Budget) Reserve(amount int64) (*Hold, error) {
	if amount < 0 {
		return nil, ErrInvalid
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	if amount > b.free() {
		return nil, b.exhausted(amount)
	}
	b.reserved += amount
	return &Hold{b: b, amount: amount}, nil
}

// Commit charges the actual usage and releases the rest of the hold. Usage
// beyond the hold is charged as far as the budget has room; any excess
// cannot be charged without breaking the limit, so it is returned as overrun
// and added to Stats().Overrun, and the budget is left full (the next
// Reserve fails). This cap keeps the tree invariant exact even when an
// estimate was too low, while the caller still learns (and can record) the
// true usage, which is spent plus overrun. Reserve pessimistically
// (estimated input plus max_tokens) and overrun does not happen.
func (h *Hold) Commit(actual int64) (overrun int64) {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if h.done {
		return 0
	}
	h.done = true
	b.reserved -= h.amount
	charge := max(actual, 0)
	if room := b.free(); charge > room {
		overrun = charge - room
		charge = room
	}
	b.spent += charge
	b.overrun += overrun
	b.tidy()
	return overrun
}

// Cancel releases the hold without charging anything.
func (h *Hold) Cancel() {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if h.done {
		return
	}
	h.done = true
	b.reserved -= h.amount
	b.tidy()
}

// Child carves a child budget of exactly limit units out of b's remaining
// capacity, or fails with an *ExhaustedError.
func (b *Budget) Child(limit int64) (*Budget, error) {
	if limit < 0 {
		return nil, ErrInvalid
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	if limit > b.free() {
		return nil, b.exhausted(limit)
	}
	return b.child(limit), nil
}

// Carve carves a child budget of alpha (in (0, 1]) of b's remaining
// capacity, rounded down and at most upTo if upTo is positive. It fails
// with an *ExhaustedError if that comes to nothing.
func (b *Budget) Carve(alpha float64, upTo int64) (*Budget, error) {
	if !(alpha > 0 && alpha <= 1) {
		return nil, ErrInvalid
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	limit := int64(alpha * float64(b.free()))
	if upTo > 0 {
		limit = min(limit, upTo)
	}
	if limit <= 0 {
		return nil, b.exhausted(1)
	}
	return b.child(limit), nil
}

func (b *Budget) child(limit int64) *Budget {
	b.carved += limit
	return &Budget{mu: b.mu, parent: b, limit: limit}
}

// Close stops new reservations and children. Holds and children already
// made stay valid. The capacity b does not need any more (now, and as its
// holds and children settle) returns to its parent; once nothing is
// outstanding its spend is folded into the parent's. Close is idempotent;
// closing a root only stops new reservations.
func (b *Budget) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	b.tidy()
}

// BudgetStats is a snapshot of a Budget.
type BudgetStats struct {
	Limit int64
	// Spent is committed spend, including that of children already closed
	// and settled.
	Spent int64
	// Reserved is held by outstanding Holds; Carved is the limits of
	// children still open or unsettled.
	Reserved int64
	Carved   int64
	// Remaining is what a Reserve could take now.
	Remaining int64
	// Overrun is usage that Commit could not charge (see Hold.Commit).
	Overrun int64
	Closed  bool
}

// Stats returns a snapshot of b.
func (b *Budget) Stats() BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BudgetStats{Limit: b.limit, Spent: b.spent, Reserved: b.reserved, Carved: b.carved,
		Remaining: b.free(), Overrun: b.overrun, Closed: b.closed}
}

// free is the capacity not spent, held or carved. Called with the lock.
func (b *Budget) free() int64 {
	return b.limit - b.spent - b.reserved - b.carved
}

func (b *Budget) exhausted(requested int64) error {
	return &ExhaustedError{Limit: b.limit, Spent: b.spent, Reserved: b.reserved + b.carved, Requested: requested}
}

// tidy returns a closed child's unneeded capacity to its parent, and folds a
// closed child with nothing outstanding into it; both may cascade up through
// closed ancestors. Called with the lock.
func (b *Budget) tidy() {
	for n := b; n != nil && n.closed && n.parent != nil && !n.settled; n = n.parent {
		p := n.parent
		if f := n.free(); f > 0 {
			n.limit -= f
			p.carved -= f
		}
		if n.reserved == 0 && n.carved == 0 {
			n.settled = true
			p.carved -= n.limit
			p.spent += n.spent
			p.overrun += n.overrun
		}
	}
}
