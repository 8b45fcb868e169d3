package board

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Session is a lease that its Store keeps alive in the background, renewing
// it every TTL/3 on the store's clock, until Close, the store's Close, or the
// lease is lost. It is a lifetime object: Context returns a context that is
// cancelled when the session ends, so work that must stop with the lease can
// derive from it.
type Session struct {
	store *Store
	lease LeaseID
	ttl   time.Duration

	ctx    context.Context // cancelled when the session ends
	cancel context.CancelFunc
	done   chan struct{} // closed when the keep-alive goroutine has exited

	closeOnce sync.Once
	mu        sync.Mutex
	err       error
}

// NewSession grants a lease of ttl and keeps it alive until the session ends.
func (s *Store) NewSession(ctx context.Context, ttl time.Duration) (*Session, error) {
	lease, err := s.Grant(ctx, ttl)
	if err != nil {
		return nil, err
	}
	if !s.own() {
		return nil, ErrClosed
	}
	sctx, cancel := context.WithCancel(s.life)
	ss := &Session{store: s, lease: lease, ttl: ttl, ctx: sctx, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer s.wg.Done()
		defer close(ss.done)
		ss.keepAlive()
	}()
	return ss, nil
}

// Lease returns the session's lease, for binding keys to it.
func (ss *Session) Lease() LeaseID { return ss.lease }

// Done is closed when the session has ended: the lease was lost (not renewed
// within its TTL, or revoked), the session was closed, or the store closed.
func (ss *Session) Done() <-chan struct{} { return ss.ctx.Done() }

// Context returns a context cancelled when the session ends.
func (ss *Session) Context() context.Context { return ss.ctx }

// Err reports why the session ended: ErrLeaseExpired if the lease was lost,
// ErrClosed if the session or store was closed, nil while it is live.
func (ss *Session) Err() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.err
}

func (ss *Session) end(err error) {
	ss.mu.Lock()
	if ss.err == nil {
		ss.err = err
	}
	ss.mu.Unlock()
	ss.cancel()
}

// Close ends the session and revokes its lease, deleting the keys bound to
// it. Closing a session whose lease is already lost returns nil.
func (ss *Session) Close(ctx context.Context) error {
	var err error
	ss.closeOnce.Do(func() {
		ss.end(ErrClosed)
		<-ss.done
		err = ss.store.Revoke(ctx, ss.lease)
		if errors.Is(err, ErrLeaseExpired) {
			err = nil
		}
	})
	return err
}

// keepAlive renews the lease every ttl/3. A transient renewal failure is
// retried sooner; the session is lost once the backend says the lease is gone
// or a whole TTL has passed since the last successful renewal was sent.
func (ss *Session) keepAlive() {
	clock := ss.store.clock
	interval := max(ss.ttl/3, time.Millisecond)
	deadline := clock.Now().Add(ss.ttl)
	wait := interval
	for {
		select {
		case <-ss.ctx.Done():
			ss.end(ErrClosed)
			return
		case <-clock.After(wait):
		}
		// The server restarts the TTL somewhere between sending and the
		// reply: count from the send, the earliest it can have.
		sent := clock.Now()
		rctx, cancel := context.WithTimeout(ss.ctx, ss.ttl)
		err := ss.store.b.Renew(rctx, ss.lease)
		cancel()
		switch {
		case err == nil:
			deadline = sent.Add(ss.ttl)
			wait = interval
		case errors.Is(err, ErrLeaseExpired):
			ss.end(ErrLeaseExpired)
			return
		case ss.ctx.Err() != nil:
			ss.end(ErrClosed)
			return
		case !clock.Now().Before(deadline):
			ss.end(ErrLeaseExpired)
			return
		default:
			wait = max(interval/4, time.Millisecond)
		}
	}
}
