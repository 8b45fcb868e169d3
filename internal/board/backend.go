package board

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors. Every error a Store returns for one of these conditions
// wraps the sentinel, so callers test with errors.Is.
var (
	// ErrNotFound: the key, task, claim, leader or hint does not exist.
	ErrNotFound = errors.New("board: not found")
	// ErrClaimed: another holder has a live claim on the task.
	ErrClaimed = errors.New("board: already claimed")
	// ErrLeaseExpired: the lease is gone (expired, revoked, or unknown), so
	// whatever it guarded is no longer held.
	ErrLeaseExpired = errors.New("board: lease expired")
	// ErrStaleFence: a newer claim exists for the task than the fencing token
	// presented (or the token was never issued for it).
	ErrStaleFence = errors.New("board: stale fencing token")
	// ErrRevisionMismatch: a compare-and-swap found a different revision.
	ErrRevisionMismatch = errors.New("board: revision mismatch")
	// ErrCompacted: the requested revision's history has been compacted away.
	ErrCompacted = errors.New("board: revision compacted")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("board: store closed")
	// ErrInvalid: a malformed argument (empty key, bad DSN, non-positive TTL).
	ErrInvalid = errors.New("board: invalid argument")
	// ErrBadTransition: a hint review from a state that does not allow it.
	ErrBadTransition = errors.New("board: invalid review transition")
)

// LeaseID names a lease. NoLease binds a key to no lease.
type LeaseID int64

// NoLease is the zero LeaseID: a key written with it lives until deleted.
const NoLease LeaseID = 0

// KV is a key with its value and revisions. CreateRevision is the store
// revision at which the key was (last) created; ModRevision the revision of
// its latest write. An absent key reads as the zero KV.
type KV struct {
	Key            string
	Value          []byte
	CreateRevision int64
	ModRevision    int64
	Lease          LeaseID
}

// EventType says what an Event did to its key.
type EventType uint8

// Event types.
const (
	EventPut EventType = iota + 1
	EventDelete
)

func (t EventType) String() string {
	switch t {
	case EventPut:
		return "put"
	case EventDelete:
		return "delete"
	}
	return "unknown"
}

// Event is one change seen by a watch. Revision is the store revision of the
// change; for a put, CreateRevision and Lease describe the key as written; for
// a delete (including a lease expiry) Value is nil.
type Event struct {
	Type           EventType
	Key            string
	Value          []byte
	Revision       int64
	CreateRevision int64
	Lease          LeaseID
}

// CmpTarget selects the revision a Cmp compares.
type CmpTarget uint8

// Comparison targets.
const (
	CmpCreate CmpTarget = iota + 1 // the key's CreateRevision
	CmpMod                         // the key's ModRevision
)

// Cmp is an equality test on one key's revision, evaluated atomically by Txn.
// An absent key has revision 0 for both targets.
type Cmp struct {
	Key      string
	Target   CmpTarget
	Revision int64
}

// Absent holds when key does not exist.
func Absent(key string) Cmp { return Cmp{Key: key, Target: CmpCreate} }

// CreatedAt holds when key exists and was created at rev: the key still
// belongs to the writer that created it (the etcd "IsOwner" comparison).
func CreatedAt(key string, rev int64) Cmp { return Cmp{Key: key, Target: CmpCreate, Revision: rev} }

// ModifiedAt holds when key's latest write was at rev (0: key absent).
func ModifiedAt(key string, rev int64) Cmp { return Cmp{Key: key, Target: CmpMod, Revision: rev} }

// Holds evaluates c against kv, the current state of c.Key (zero if absent).
func (c Cmp) Holds(kv KV) bool {
	switch c.Target {
	case CmpCreate:
		return kv.CreateRevision == c.Revision
	case CmpMod:
		return kv.ModRevision == c.Revision
	}
	return false
}

// OpType says what an Op writes.
type OpType uint8

// Op types.
const (
	OpPut OpType = iota + 1
	OpDelete
)

// Op is one write in a Txn.
type Op struct {
	Type  OpType
	Key   string
	Value []byte
	Lease LeaseID // OpPut only; NoLease for a durable key
}

// PutOp writes value to key, bound to lease (NoLease for none).
func PutOp(key string, value []byte, lease LeaseID) Op {
	return Op{Type: OpPut, Key: key, Value: value, Lease: lease}
}

// DeleteOp deletes key; deleting an absent key changes nothing.
func DeleteOp(key string) Op { return Op{Type: OpDelete, Key: key} }

// MaxTxnOps is the most comparisons, and the most writes, one Txn may hold:
// etcd's default limit (its --max-txn-ops). Both backends refuse a larger
// Txn with ErrInvalid, so that what works on one machine works on many.
const MaxTxnOps = 128

// Txn is an atomic conditional write: if every Cmp in If holds, all of Then
// is applied at one new revision; otherwise nothing is written. If and Then
// hold at most MaxTxnOps entries each.
type Txn struct {
	If   []Cmp
	Then []Op
}

// TxnResult reports a Txn's outcome. Revision is the store revision after
// the Txn (the new revision when it wrote something). When the Txn failed,
// Current holds the state of each If key at that revision, in If's order
// (the zero KV, apart from Key, for an absent key).
type TxnResult struct {
	Succeeded bool
	Revision  int64
	Current   []KV
}

// Backend is a storage engine under a Store: a revisioned key-value store
// with leases and watches, in the manner of etcd's v3 API. Implementations
// live in board/local (SQLite) and board/etcd; all of a Store's semantics
// (claims, fencing, elections, typed records) are built on these methods,
// so a Backend that passes boardtest behaves like every other.
//
// Contract, for every implementation:
//   - One store-wide revision counts writes: each successful Txn that changes
//     something, and each Revoke or lease expiry that deletes keys, takes
//     exactly one new revision, greater than any before it; the revision
//     survives restarts and never goes back. Leases themselves (Grant, Renew)
//     take no revision.
//   - Store validates arguments before calling a Backend: keys are non-empty,
//     a Txn writes each key at most once, TTLs are positive.
//   - Writing a key bound to a lease that does not exist fails with
//     ErrLeaseExpired and writes nothing.
//   - When a lease expires or is revoked, every key bound to it is deleted at
//     one revision (with delete events).
//   - Errors that match a sentinel wrap it; all methods are safe for
//     concurrent use.
type Backend interface {
	// Get returns key's current KV or ErrNotFound.
	Get(ctx context.Context, key string) (KV, error)
	// List returns the keys beginning with prefix ("" for all), ordered by
	// key, and the store revision at which they were read.
	List(ctx context.Context, prefix string) ([]KV, int64, error)
	// Revision returns the current store revision.
	Revision(ctx context.Context) (int64, error)
	// Txn applies t atomically.
	Txn(ctx context.Context, t Txn) (TxnResult, error)
	// Grant creates a lease that expires ttl after its last renewal. A
	// backend may round ttl up (etcd: whole seconds, at least its minimum).
	Grant(ctx context.Context, ttl time.Duration) (LeaseID, error)
	// Renew restarts the lease's TTL, or returns ErrLeaseExpired.
	Renew(ctx context.Context, id LeaseID) error
	// Revoke ends the lease now, deleting its keys, or returns
	// ErrLeaseExpired if it no longer exists.
	Revoke(ctx context.Context, id LeaseID) error
	// Watch calls yield with the events for keys under prefix from revision
	// from on (0: from the next revision), in revision order, each exactly
	// once, leaving out at the source the types opts excludes. Each call
	// holds the (wanted) events of one or more whole revisions. Watch
	// blocks until ctx is done (returning ctx.Err()), yield returns false
	// (nil), the history before from is compacted (ErrCompacted), or the
	// backend closes (ErrClosed). It must survive the loss of connections it
	// can recover from (an etcd member dying) without a gap.
	Watch(ctx context.Context, prefix string, from int64, opts WatchOptions, yield func([]Event) bool) error
	// Compact discards the history before rev; watches from an earlier
	// revision then fail with ErrCompacted. Compacting to a revision at or
	// below an earlier compaction does nothing.
	Compact(ctx context.Context, rev int64) error
	// Close releases the backend. Leases are not revoked: they lapse by TTL,
	// as after a crash.
	Close() error
}

// Clock is the time source for a Store's keep-alives and for the local
// backend's lease expiry. After behaves like time.After.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// SystemClock returns the Clock that reads the time package (under
// testing/synctest, a bubble's virtual time).
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
