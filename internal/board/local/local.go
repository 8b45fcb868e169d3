// Package local is the board backend for one machine: a SQLite database
// (modernc.org/sqlite, pure Go) in WAL mode, shared by any number of
// processes. Writes are BEGIN IMMEDIATE transactions; every one that moves
// the store revision is fsynced (synchronous=FULL) before it returns, so a
// committed revision — and so every fencing token — survives a crash or a
// power cut, and a transaction interrupted by kill -9 leaves no trace. Lease
// bookkeeping that moves no revision is not fsynced on its own (see write).
//
// Every change is also appended to an event log that watches read, so a watch
// resumes from any revision not yet compacted; the log grows until
// Store.Compact trims it. Leases carry a deadline on the injected clock; a
// reaper goroutine owned by the backend deletes the keys of expired leases
// at their deadline (each durable write also reaps first, so a lapsed claim
// never blocks a new one), and rescans for other processes' leases every
// second. While a watch is active, writes by other processes are noticed by
// polling the store revision every PollInterval.
package local

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apiary-dev/apiary/internal/board"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Options configures the local backend. The zero value is usable.
type Options struct {
	// Clock drives lease deadlines and the reaper. Nil means
	// board.SystemClock(). Processes sharing a database must share a clock
	// (the system clock, normally).
	Clock board.Clock
	// PollInterval is how often a backend with an active watch looks for
	// writes by other processes; default 10ms. (Its own writes wake its
	// watches at once.)
	PollInterval time.Duration
	// BusyTimeout bounds how long a write waits for another process's write
	// lock; default 10s.
	BusyTimeout time.Duration
}

const schema = `
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT;
INSERT OR IGNORE INTO meta (name, value) VALUES ('revision', 0), ('compacted', 0), ('lease', 0);
CREATE TABLE IF NOT EXISTS kv (
	key BLOB PRIMARY KEY, value BLOB NOT NULL,
	create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL, lease INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS kv_lease ON kv (lease) WHERE lease != 0;
CREATE TABLE IF NOT EXISTS events (
	rev INTEGER NOT NULL, seq INTEGER NOT NULL, type INTEGER NOT NULL, key BLOB NOT NULL,
	value BLOB, create_rev INTEGER NOT NULL, lease INTEGER NOT NULL,
	PRIMARY KEY (rev, seq)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS leases (id INTEGER PRIMARY KEY, ttl INTEGER NOT NULL, deadline INTEGER NOT NULL) STRICT;
CREATE INDEX IF NOT EXISTS leases_deadline ON leases (deadline);
`

// Open opens (creating if needed) the board database at path and returns a
// Store over it. The directory must exist.
func Open(ctx context.Context, path string, opts Options) (*board.Store, error) {
	b, err := open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return board.New(b, board.Options{Clock: b.clock}), nil
}

// backend implements board.Backend on SQLite.
type backend struct {
	db    *sql.DB
	clock board.Clock
	poll  time.Duration

	// writeSem (capacity 1) serializes this store's writers and guards
	// wconn and wsync. A channel, not a mutex, so a waiter honours ctx and
	// counts as durably blocked under testing/synctest (SQLite's busy
	// handler sleeps on the clock).
	writeSem chan struct{}
	wconn    *sql.Conn // the connection every write uses
	wsync    string    // its current PRAGMA synchronous

	stmts stmtCache

	qmu   sync.Mutex
	queue []*writeReq // writes waiting for a leader to commit them

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when the revision advances
	seen    int64         // highest revision announced on changed

	tail tail // the newest events, shared by this store's watches

	wakeReaper chan struct{} // buffered 1: a new lease may be due sooner, or a watch began
	watches    atomic.Int32  // active watches: while > 0 the reaper polls

	// life is cancelled by Close; it bounds the reaper and every watch.
	life      context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	// beforeCommit, if set (tests only), runs inside each write transaction
	// after its changes and before COMMIT.
	beforeCommit func()
}

var _ board.Backend = (*backend)(nil)

func open(ctx context.Context, path string, opts Options) (*backend, error) {
	if path == "" || strings.ContainsAny(path, "?\x00") {
		return nil, fmt.Errorf("local board path %q: %w", path, board.ErrInvalid)
	}
	if opts.Clock == nil {
		opts.Clock = board.SystemClock()
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 10 * time.Millisecond
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 10 * time.Second
	}
	dsn := fmt.Sprintf("%s?_txlock=immediate&_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)",
		path, opts.BusyTimeout.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open local board %s: %w", path, err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	b := &backend{
		db: db, clock: opts.Clock, poll: opts.PollInterval,
		changed: make(chan struct{}), wakeReaper: make(chan struct{}, 1), writeSem: make(chan struct{}, 1),
	}
	b.stmts.db = db
	b.life, b.cancel = context.WithCancel(context.Background())
	if err := b.init(ctx); err != nil {
		b.cancel()
		if b.wconn != nil {
			b.wconn.Close()
		}
		db.Close()
		return nil, fmt.Errorf("open local board %s: %w", path, err)
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.reaper()
	}()
	return b, nil
}

func (b *backend) init(ctx context.Context) error {
	b.writeSem <- struct{}{}
	defer func() { <-b.writeSem }()
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return err
	}
	b.wconn = conn
	tx, err := b.wconn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, qRevision).Scan(&b.seen); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return b.stmts.prepare(ctx, queries())
}

// Close stops the reaper, ends every watch with ErrClosed and closes the
// database. Leases are left to lapse.
func (b *backend) Close() error {
	b.closeOnce.Do(func() {
		b.cancel()
		b.wg.Wait()
		b.writeSem <- struct{}{} // no write is running, and none will start
		b.closeErr = errors.Join(b.stmts.close(), b.wconn.Close(), b.db.Close())
	})
	return b.closeErr
}

func (b *backend) isClosed() bool { return b.life.Err() != nil }

// dbErr maps errors from database calls made after Close to ErrClosed.
func (b *backend) dbErr(err error) error {
	if err != nil && b.isClosed() && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %v", board.ErrClosed, err)
	}
	return err
}

// pool runs prepared statements outside a transaction; in, inside tx.
func (b *backend) pool() prepared         { return prepared{c: &b.stmts} }
func (b *backend) in(tx *sql.Tx) prepared { return prepared{c: &b.stmts, tx: tx} }

// announce wakes watchers if rev is newer than what they have been told.
func (b *backend) announce(rev int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rev > b.seen {
		b.seen = rev
		close(b.changed)
		b.changed = make(chan struct{})
	}
}

// changes returns the channel closed at the next announcement.
func (b *backend) changes() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

func (b *backend) Get(ctx context.Context, key string) (board.KV, error) {
	kv, err := getKV(ctx, b.pool(), key)
	if err != nil {
		return board.KV{}, b.dbErr(err)
	}
	if kv.ModRevision == 0 {
		return board.KV{}, fmt.Errorf("key %q: %w", key, board.ErrNotFound)
	}
	return kv, nil
}

// querier is what *sql.DB, *sql.Tx and prepared share.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// getKV reads key; an absent key reads as a KV with only Key set.
func getKV(ctx context.Context, q querier, key string) (board.KV, error) {
	kv := board.KV{Key: key}
	var lease int64
	err := q.QueryRowContext(ctx, qGetKV, []byte(key)).
		Scan(&kv.Value, &kv.CreateRevision, &kv.ModRevision, &lease)
	if errors.Is(err, sql.ErrNoRows) {
		return kv, nil
	}
	kv.Lease = board.LeaseID(lease)
	return kv, err
}

// prefixRange returns the SQL condition and arguments selecting keys under
// prefix.
func prefixRange(prefix string) (string, []any) {
	if prefix == "" {
		return "1", nil
	}
	end := []byte(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return "key >= ? AND key < ?", []any{[]byte(prefix), end[:i+1]}
		}
	}
	return "key >= ?", []any{[]byte(prefix)}
}

func (b *backend) List(ctx context.Context, prefix string) ([]board.KV, int64, error) {
	kvs, rev, err := b.list(ctx, prefix)
	return kvs, rev, b.dbErr(err)
}

func (b *backend) list(ctx context.Context, prefix string) ([]board.KV, int64, error) {
	tx, err := b.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, err
	}
	defer tx.Rollback()
	cond, args := prefixRange(prefix)
	rows, err := b.in(tx).QueryContext(ctx, listQuery(cond), args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var kvs []board.KV
	for rows.Next() {
		var kv board.KV
		var key []byte
		var lease int64
		if err := rows.Scan(&key, &kv.Value, &kv.CreateRevision, &kv.ModRevision, &lease); err != nil {
			return nil, 0, err
		}
		kv.Key, kv.Lease = string(key), board.LeaseID(lease)
		kvs = append(kvs, kv)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	rev, err := metaValue(ctx, b.in(tx), "revision")
	return kvs, rev, err
}

func metaValue(ctx context.Context, q querier, name string) (int64, error) {
	var v int64
	err := q.QueryRowContext(ctx, qMeta, name).Scan(&v)
	return v, err
}

func (b *backend) Revision(ctx context.Context) (int64, error) {
	rev, err := metaValue(ctx, b.pool(), "revision")
	return rev, b.dbErr(err)
}

// leaseRescan bounds how long the reaper goes without looking for leases
// granted by other processes.
const leaseRescan = time.Second

// reaper expires leases at their deadlines and, while watches are active,
// notices other processes' writes, until Close.
func (b *backend) reaper() {
	ctx := b.life
	for {
		wait := leaseRescan
		if b.watches.Load() > 0 {
			wait = b.poll
		}
		if next, ok, err := b.nextDeadline(ctx); err == nil && ok {
			wait = min(wait, max(next.Sub(b.clock.Now()), 0))
		}
		select {
		case <-ctx.Done():
			return
		case <-b.wakeReaper:
		case <-b.clock.After(wait):
		}
		// Errors here are retried on the next round; a writer also reaps.
		_ = b.expire(ctx)
		if rev, err := metaValue(ctx, b.pool(), "revision"); err == nil {
			b.announce(rev)
		}
	}
}

func (b *backend) nextDeadline(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullInt64
	if err := b.pool().QueryRowContext(ctx, qNextDeadline).Scan(&next); err != nil || !next.Valid {
		return time.Time{}, false, err
	}
	return time.Unix(0, next.Int64), true, nil
}

// expire reaps every lease past its deadline, if there is one.
func (b *backend) expire(ctx context.Context) error {
	var due int
	err := b.pool().QueryRowContext(ctx, qDueLeases, b.clock.Now().UnixNano()).Scan(&due)
	if err != nil || due == 0 {
		return err
	}
	return b.write(ctx, true, func(*writer) error { return nil })
}

// poke wakes the reaper early.
func (b *backend) poke() {
	select {
	case b.wakeReaper <- struct{}{}:
	default:
	}
}
