// Package board is apiary's coordination store: a revisioned key-value store
// with leases and watches, and on top of it the primitives a swarm needs —
// exclusive claims with fencing tokens, leader elections, tasks, intents,
// conflict records and reviewed resolution hints.
//
// A Store wraps a Backend. Two backends exist: board/local (SQLite in WAL
// mode, one machine, any number of processes) and board/etcd (a real etcd
// cluster, many machines). Everything above the Backend interface is written
// once here, so both backends share one set of semantics, checked by the
// conformance suite in board/boardtest. DSNs name a backend: "local:PATH" or
// "etcd://HOST:PORT[,HOST:PORT...][/PREFIX]" (see ParseDSN); board/connect
// opens one.
//
// The model is etcd's v3 API and its concurrency package:
//   - Every write takes a new store-wide revision; a key records the revision
//     that created it and the one that last modified it.
//   - Compare-and-swap is a Txn: if revisions match, apply writes atomically.
//   - A lease expires unless renewed; keys bound to it vanish with it.
//   - A claim on a task is a lease-bound key created only if absent; the
//     revision that created it is the claim's fencing token: store-wide,
//     strictly increasing and durable. A durable fence record per task
//     remembers the newest token, so late writers are rejected after the
//     claim itself is gone.
//   - Watches resume without gaps: read at revision R, watch from R+1.
//
// Every blocking call takes a context first. A Store is safe for concurrent
// use; each Store is an independent client, like a process (two Stores on one
// local database or one etcd cluster see the same board).
package board

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Options configures a Store. The zero value is usable.
type Options struct {
	// Clock paces session keep-alives. Nil means SystemClock().
	Clock Clock
}

// Store is a client of a board. Create one with New (or board/local,
// board/etcd, board/connect); Close it when done.
type Store struct {
	b     Backend
	clock Clock

	// life is the store's lifetime: cancelled by Close, it stops every
	// goroutine the store owns. Stored because it is the lifetime object.
	life   context.Context
	cancel context.CancelFunc

	mu       sync.Mutex // guards isClosed with wg.Add
	isClosed bool
	wg       sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// New returns a Store over b. The Store owns b: Close closes it.
func New(b Backend, opts Options) *Store {
	clock := opts.Clock
	if clock == nil {
		clock = SystemClock()
	}
	life, cancel := context.WithCancel(context.Background())
	return &Store{b: b, clock: clock, life: life, cancel: cancel}
}

// Close stops the store's keep-alives and watches, then closes the backend.
// It does not revoke leases or resign leaderships: those lapse by TTL, as if
// the process had crashed; Release, Resign or Session.Close first for a
// prompt hand-over. Close is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.isClosed = true
		s.mu.Unlock()
		s.cancel()
		s.wg.Wait()
		s.closeErr = s.b.Close()
	})
	return s.closeErr
}

// closed reports whether Close has begun.
func (s *Store) closed() bool { return s.life.Err() != nil }

// own registers a goroutine that Close must wait for; it reports false,
// registering nothing, once Close has begun. The goroutine calls s.wg.Done.
func (s *Store) own() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isClosed {
		return false
	}
	s.wg.Add(1)
	return true
}

// live returns ErrClosed once Close has begun.
func (s *Store) live() error {
	if s.closed() {
		return ErrClosed
	}
	return nil
}

func checkKey(key string) error {
	if key == "" {
		return fmt.Errorf("empty key: %w", ErrInvalid)
	}
	return nil
}

// Get returns key's current value and revisions, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (KV, error) {
	if err := checkKey(key); err != nil {
		return KV{}, err
	}
	if err := s.live(); err != nil {
		return KV{}, err
	}
	return s.b.Get(ctx, key)
}

// List returns every key under prefix ("" for all) ordered by key, with the
// revision they were read at: watch from that revision + 1 to follow changes
// without a gap.
func (s *Store) List(ctx context.Context, prefix string) ([]KV, int64, error) {
	if err := s.live(); err != nil {
		return nil, 0, err
	}
	return s.b.List(ctx, prefix)
}

// Revision returns the current store revision.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := s.live(); err != nil {
		return 0, err
	}
	return s.b.Revision(ctx)
}

// Put writes key unconditionally, bound to lease (NoLease for none), and
// returns the new revision.
func (s *Store) Put(ctx context.Context, key string, value []byte, lease LeaseID) (int64, error) {
	res, err := s.Txn(ctx, Txn{Then: []Op{PutOp(key, value, lease)}})
	return res.Revision, err
}

// CAS writes key only if its ModRevision equals modRev; modRev 0 means
// "only if absent" (create). It returns the new revision, or
// ErrRevisionMismatch with nothing written.
func (s *Store) CAS(ctx context.Context, key string, value []byte, modRev int64, lease LeaseID) (int64, error) {
	res, err := s.Txn(ctx, Txn{If: []Cmp{ModifiedAt(key, modRev)}, Then: []Op{PutOp(key, value, lease)}})
	if err != nil {
		return 0, err
	}
	if !res.Succeeded {
		return 0, fmt.Errorf("put %q: have revision %d, want %d: %w", key, res.Current[0].ModRevision, modRev, ErrRevisionMismatch)
	}
	return res.Revision, nil
}

// Delete removes key and returns the revision of the deletion, or
// ErrNotFound if it did not exist.
func (s *Store) Delete(ctx context.Context, key string) (int64, error) {
	for {
		kv, err := s.Get(ctx, key)
		if err != nil {
			return 0, err
		}
		rev, err := s.CompareAndDelete(ctx, key, kv.ModRevision)
		if errors.Is(err, ErrRevisionMismatch) {
			continue // rewritten between the read and the delete: read again
		}
		return rev, err
	}
}

// CompareAndDelete removes key only if its ModRevision equals modRev. It
// returns the revision of the deletion, ErrNotFound if the key is absent, or
// ErrRevisionMismatch.
func (s *Store) CompareAndDelete(ctx context.Context, key string, modRev int64) (int64, error) {
	if modRev == 0 {
		return 0, fmt.Errorf("delete %q: revision 0: %w", key, ErrInvalid)
	}
	res, err := s.Txn(ctx, Txn{If: []Cmp{ModifiedAt(key, modRev)}, Then: []Op{DeleteOp(key)}})
	if err != nil {
		return 0, err
	}
	if !res.Succeeded {
		if res.Current[0].ModRevision == 0 {
			return 0, fmt.Errorf("delete %q: %w", key, ErrNotFound)
		}
		return 0, fmt.Errorf("delete %q: have revision %d, want %d: %w", key, res.Current[0].ModRevision, modRev, ErrRevisionMismatch)
	}
	return res.Revision, nil
}

// Txn applies t atomically: all of t.Then at one new revision if every
// comparison holds, else nothing (Succeeded false, Current filled in).
// Writing a key bound to a lease that no longer exists fails with
// ErrLeaseExpired.
func (s *Store) Txn(ctx context.Context, t Txn) (TxnResult, error) {
	if err := validateTxn(t); err != nil {
		return TxnResult{}, err
	}
	if err := s.live(); err != nil {
		return TxnResult{}, err
	}
	return s.b.Txn(ctx, t)
}

func validateTxn(t Txn) error {
	if len(t.If) > MaxTxnOps || len(t.Then) > MaxTxnOps {
		return fmt.Errorf("txn of %d comparisons and %d writes, over %d: %w", len(t.If), len(t.Then), MaxTxnOps, ErrInvalid)
	}
	for _, c := range t.If {
		if err := checkKey(c.Key); err != nil {
			return err
		}
		if c.Target != CmpCreate && c.Target != CmpMod {
			return fmt.Errorf("comparison on %q: unknown target %d: %w", c.Key, c.Target, ErrInvalid)
		}
	}
	seen := make(map[string]bool, len(t.Then))
	for _, op := range t.Then {
		if err := checkKey(op.Key); err != nil {
			return err
		}
		if op.Type != OpPut && op.Type != OpDelete {
			return fmt.Errorf("op on %q: unknown type %d: %w", op.Key, op.Type, ErrInvalid)
		}
		if seen[op.Key] {
			return fmt.Errorf("key %q written twice in one txn: %w", op.Key, ErrInvalid)
		}
		seen[op.Key] = true
	}
	return nil
}

// Compact discards history before rev: later watches from an earlier
// revision fail with ErrCompacted.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	if rev <= 0 {
		return fmt.Errorf("compact to revision %d: %w", rev, ErrInvalid)
	}
	if err := s.live(); err != nil {
		return err
	}
	return s.b.Compact(ctx, rev)
}

// Grant creates a lease that expires ttl after its last renewal; keys bound
// to it are deleted when it does. The holder renews it (Renew) or uses a
// Session to have the store do so.
func (s *Store) Grant(ctx context.Context, ttl time.Duration) (LeaseID, error) {
	if ttl <= 0 {
		return NoLease, fmt.Errorf("lease ttl %v: %w", ttl, ErrInvalid)
	}
	if err := s.live(); err != nil {
		return NoLease, err
	}
	return s.b.Grant(ctx, ttl)
}

// Renew restarts lease's TTL, or returns ErrLeaseExpired if it is gone —
// the holder must then stop acting on whatever the lease guarded.
func (s *Store) Renew(ctx context.Context, lease LeaseID) error {
	if lease == NoLease {
		return fmt.Errorf("renew lease 0: %w", ErrInvalid)
	}
	if err := s.live(); err != nil {
		return err
	}
	return s.b.Renew(ctx, lease)
}

// Revoke ends lease now and deletes its keys. It returns ErrLeaseExpired if
// the lease was already gone.
func (s *Store) Revoke(ctx context.Context, lease LeaseID) error {
	if lease == NoLease {
		return fmt.Errorf("revoke lease 0: %w", ErrInvalid)
	}
	if err := s.live(); err != nil {
		return err
	}
	return s.b.Revoke(ctx, lease)
}
