package attempt

import (
	"context"
	"sync"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
)

// revokeRecorder is an ModelAccess that records revocations.
type revokeRecorder struct {
	mu      sync.Mutex
	revoked []string
	fired   chan struct{}
}

func (r *revokeRecorder) Grant(context.Context, TaskRef, envelope.Budget) (Access, error) {
	return Access{}, nil
}

func (r *revokeRecorder) Usage(context.Context, string) (Usage, error) {
	return Usage{}, nil
}

func (r *revokeRecorder) Revoke(_ context.Context, keyID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.revoked = append(r.revoked, keyID)
	if len(r.revoked) == 1 {
		close(r.fired)
	}
	return nil
}

// TestEndAccess: an attempt's key is revoked the moment its context is
// cancelled, and once only, whether the cancellation or the agent's exit
// comes first; without a key or a revoker nothing happens.
func TestEndAccess(t *testing.T) {
	t.Parallel()
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		rec := &revokeRecorder{fired: make(chan struct{})}
		ctx, cancel := context.WithCancel(t.Context())
		done := EndAccess(ctx, rec, "vk_1")
		cancel()
		<-rec.fired // revoked without waiting for the agent to exit
		done()
		if len(rec.revoked) != 1 || rec.revoked[0] != "vk_1" {
			t.Errorf("revoked %v, want [vk_1] once", rec.revoked)
		}
	})
	t.Run("exited", func(t *testing.T) {
		t.Parallel()
		rec := &revokeRecorder{fired: make(chan struct{})}
		ctx, cancel := context.WithCancel(t.Context())
		EndAccess(ctx, rec, "vk_2")()
		cancel()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.revoked) != 1 || rec.revoked[0] != "vk_2" {
			t.Errorf("revoked %v, want [vk_2] once", rec.revoked)
		}
	})
	t.Run("no key", func(t *testing.T) {
		t.Parallel()
		rec := &revokeRecorder{fired: make(chan struct{})}
		EndAccess(t.Context(), rec, "")()
		if len(rec.revoked) != 0 {
			t.Errorf("revoked %v without a key", rec.revoked)
		}
	})
}
