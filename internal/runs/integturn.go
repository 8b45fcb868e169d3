package runs

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// errCheckStale ends a candidate's checks when the ref moved under them:
// their result could not be used, the tree to commit is another one now.
var errCheckStale = errors.New("the integration ref moved while the checks ran")

// errPreempted ends a re-check that holds the turn when a candidate whose
// checks are shorter asks for it.
var errPreempted = errors.New("a shorter re-check goes first")

// turn lets one integration at a time check again after the ref moved,
// the one whose checks take the least time first: a candidate asking for
// it with shorter checks than the holder's preempts the holder (whose
// context then ends with errPreempted; it gives the turn back and asks
// again). So a short re-check never waits behind a long one. The zero
// value is ready to use.
type turn struct {
	mu      sync.Mutex
	holder  *turnWait
	waiting []*turnWait
}

type turnWait struct {
	d     time.Duration
	known bool // d is a whole run of the checks, not a lower bound
	ch    chan struct{}
	stop  context.CancelCauseFunc
}

// before orders waiters: checks whose length is known (they ran to the
// end once) before those only known to take at least d, then shortest
// first.
func (w *turnWait) before(o *turnWait) bool {
	if w.known != o.known {
		return w.known
	}
	return w.d < o.d
}

// acquire waits for the turn; d is how long the caller's checks take (the
// longest run seen; known when one ran to its end). The returned context
// ends when ctx does or when the holder is preempted; the caller must call
// release.
func (t *turn) acquire(ctx context.Context, d time.Duration, known bool) (context.Context, error) {
	hctx, stop := context.WithCancelCause(ctx)
	w := &turnWait{d: d, known: known, ch: make(chan struct{}), stop: stop}
	t.mu.Lock()
	if t.holder == nil {
		t.holder = w
		t.mu.Unlock()
		return hctx, nil
	}
	t.waiting = append(t.waiting, w)
	if w.before(t.holder) {
		t.holder.stop(errPreempted)
	}
	t.mu.Unlock()
	select {
	case <-w.ch:
		return hctx, nil
	case <-ctx.Done():
		t.mu.Lock()
		if i := slices.Index(t.waiting, w); i >= 0 {
			t.waiting = slices.Delete(t.waiting, i, i+1)
			t.mu.Unlock()
			stop(nil)
			return nil, context.Cause(ctx)
		}
		t.mu.Unlock()
		t.release() // granted just now: pass it on
		return nil, context.Cause(ctx)
	}
}

// release passes the turn to the waiter with the shortest checks (the
// earliest of equals).
func (t *turn) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.holder != nil {
		t.holder.stop(nil)
		t.holder = nil
	}
	if len(t.waiting) == 0 {
		return
	}
	best := 0
	for i, w := range t.waiting {
		if w.before(t.waiting[best]) {
			best = i
		}
	}
	w := t.waiting[best]
	t.waiting = slices.Delete(t.waiting, best, best+1)
	t.holder = w
	close(w.ch)
}

// refMoves returns a channel closed the next time this run moves the
// integration ref.
func (r *runner) refMoves() <-chan struct{} {
	r.movedMu.Lock()
	defer r.movedMu.Unlock()
	if r.movedCh == nil {
		r.movedCh = make(chan struct{})
	}
	return r.movedCh
}

// refMoved tells the integrations whose checks run on the old head.
func (r *runner) refMoved() {
	r.movedMu.Lock()
	defer r.movedMu.Unlock()
	if r.movedCh != nil {
		close(r.movedCh)
	}
	r.movedCh = make(chan struct{})
}

// checkUntilMoved runs fn with a context derived from hold (ctx, or the
// turn's context for a re-check) that also ends (errCheckStale) when
// moves is closed. stale reports that fn's result is of no use: the ref
// moved, or a shorter re-check preempted this one, while ctx itself is
// live.
func checkUntilMoved[T any](ctx, hold context.Context, moves <-chan struct{}, fn func(context.Context) (T, error)) (T, bool, error) {
	cctx, stop := context.WithCancelCause(hold)
	defer stop(nil)
	go func() {
		select {
		case <-moves:
			stop(errCheckStale)
		case <-cctx.Done():
		}
	}()
	v, err := fn(cctx)
	cause := context.Cause(cctx)
	stale := ctx.Err() == nil && (errors.Is(cause, errCheckStale) || errors.Is(cause, errPreempted))
	return v, stale, err
}
