package supervise

import (
	"context"
	"sync"

	"github.com/apiary-dev/apiary/internal/sched"
)

// Flow is credit-based flow control between a producer and its consumers.
// A consumer grants credits as it makes room (its window W at first, then
// one for each item it has consumed); every emission of the producer takes
// one credit and blocks while there is none. The producer can therefore
// never be more than the granted window ahead of its consumers, however
// fast it runs.
//
// In apiary the producer is a task that emits work (child envelopes through
// apiary.spawn, `apiary spawn` or .apiary/out/tasks) and the consumer is the
// scheduler that runs that work: it grants the window when the producer
// starts and one credit each time an emitted child finishes.
//
// Safe for concurrent use.
type Flow struct {
	c *sched.Credits

	mu          sync.Mutex
	outstanding int64 // emitted, not yet consumed
}

// NewFlow returns a Flow whose consumer granted window credits (negative
// means 0).
func NewFlow(window int64) *Flow { return &Flow{c: sched.NewCredits(window)} }

// Emit takes a credit for one emission, waiting while there is none. It
// returns context.Cause(ctx) if ctx ends first and sched.ErrClosed after
// Close.
func (f *Flow) Emit(ctx context.Context) error {
	if err := f.c.Acquire(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	f.outstanding++
	f.mu.Unlock()
	return nil
}

// Consumed records that the consumer finished one emitted item and grants
// its credit back.
func (f *Flow) Consumed() {
	f.mu.Lock()
	if f.outstanding > 0 {
		f.outstanding--
	}
	f.mu.Unlock()
	f.c.Grant(1)
}

// Grant adds n credits (a consumer widening its window).
func (f *Flow) Grant(n int64) { f.c.Grant(n) }

// Available returns the credits left: how many emissions would not block.
func (f *Flow) Available() int64 { return f.c.Available() }

// Outstanding returns the items emitted and not yet consumed.
func (f *Flow) Outstanding() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.outstanding
}

// Close fails every waiting and future Emit with sched.ErrClosed.
func (f *Flow) Close() { f.c.Close() }
