package gateway

import (
	"context"
	"sync"
)

// keyLoad counts the requests being served per virtual key, from the moment
// the key is known until the request's ledger row is written, so that a
// caller can wait for a key's spend to be final (WaitKeyIdle).
type keyLoad struct {
	mu      sync.Mutex
	n       map[string]int
	changed chan struct{} // closed and replaced when a count drops
}

func (k *keyLoad) enter(keyID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n == nil {
		k.n = map[string]int{}
	}
	k.n[keyID]++
}

func (k *keyLoad) leave(keyID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n[keyID]--; k.n[keyID] <= 0 {
		delete(k.n, keyID)
	}
	if k.changed != nil {
		close(k.changed)
		k.changed = nil
	}
}

// wait returns when no request of keyID is being served, or with ctx's
// cause when ctx ends first.
func (k *keyLoad) wait(ctx context.Context, keyID string) error {
	for {
		k.mu.Lock()
		if k.n[keyID] == 0 {
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
	return g.keyLoad.wait(ctx, keyID)
}
