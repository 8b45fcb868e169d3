package gateway

import (
	"context"
	"sync"
)

// keyFlights are the requests being served that present a virtual key,
// from the moment the key is known until the request's ledger row is
// recorded. Revoking the key aborts those armed with a cancel (proxied
// without an Authority, which tracks its own); WaitKeyIdle waits for a key
// to have none.
type keyFlights struct {
	mu      sync.Mutex
	m       map[*flight]struct{}
	changed chan struct{} // closed and replaced when a flight leaves
}

// enter registers a request presenting keyID; leave it when its row is
// recorded.
func (k *keyFlights) enter(keyID string) *flight {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[*flight]struct{}{}
	}
	f := &flight{keyID: keyID}
	k.m[f] = struct{}{}
	return f
}

func (k *keyFlights) leave(f *flight) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, f)
	if k.changed != nil {
		close(k.changed)
		k.changed = nil
	}
}

// arm sets the cancel that aborts f's proxying (nil: nothing to abort).
func (k *keyFlights) arm(f *flight, cancel context.CancelCauseFunc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f.cancel = cancel
}

// abort cancels the armed requests of keyID and returns how many.
func (k *keyFlights) abort(keyID string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for f := range k.m {
		if f.keyID == keyID && f.cancel != nil {
			f.cancel(ErrAborted)
			n++
		}
	}
	return n
}

// wait returns when no request of keyID is being served, or with ctx's
// cause when ctx ends first.
func (k *keyFlights) wait(ctx context.Context, keyID string) error {
	for {
		k.mu.Lock()
		busy := false
		for f := range k.m {
			if f.keyID == keyID {
				busy = true
				break
			}
		}
		if !busy {
			k.mu.Unlock()
			return nil
		}
		if k.changed == nil {
			k.changed = make(chan struct{})
		}
		ch := k.changed
		k.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// WaitKeyIdle returns once no request presenting virtual key keyID is being
// served — every request the key made so far has its ledger row recorded
// (buffered; Ledger.Flush writes it) — or with ctx's cause when ctx ends
// first. A caller that revoked the key and saw its agent exit uses it
// before reading the key's spend, so a request cut short by the revocation
// is counted.
func (g *Gateway) WaitKeyIdle(ctx context.Context, keyID string) error {
	return g.flights.wait(ctx, keyID)
}
