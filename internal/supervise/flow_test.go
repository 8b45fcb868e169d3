package supervise

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/apiary-dev/apiary/internal/sched"
)

// TestFlowBlocksAtZero: a producer with window W emits W items at once,
// then blocks until the consumer consumes one; Close fails it.
func TestFlowBlocksAtZero(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := NewFlow(3)
		for range 3 {
			if err := f.Emit(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if f.Outstanding() != 3 || f.Available() != 0 {
			t.Fatalf("outstanding %d available %d", f.Outstanding(), f.Available())
		}
		var wg sync.WaitGroup
		emitted := make(chan error, 1)
		wg.Go(func() { emitted <- f.Emit(t.Context()) })
		synctest.Wait()
		select {
		case err := <-emitted:
			t.Fatalf("emitted at zero credits: %v", err)
		default:
		}
		f.Consumed()
		if err := <-emitted; err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		ctx, cancel := context.WithCancelCause(t.Context())
		wg.Go(func() { emitted <- f.Emit(ctx) })
		synctest.Wait()
		stop := errors.New("producer cancelled")
		cancel(stop)
		if err := <-emitted; !errors.Is(err, stop) {
			t.Errorf("cancelled emit: %v", err)
		}
		wg.Go(func() { emitted <- f.Emit(t.Context()) })
		synctest.Wait()
		f.Close()
		if err := <-emitted; !errors.Is(err, sched.ErrClosed) {
			t.Errorf("emit after close: %v", err)
		}
		wg.Wait()
	})
}
