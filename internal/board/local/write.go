package local

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// writer is one write transaction. Changes are grouped: each group (a Txn, a
// lease's expiry) takes one new revision, but only if it changes something.
type writer struct {
	ctx   context.Context
	tx    prepared // the transaction, through cached statements
	now   int64    // clock reading for lease deadlines, in Unix nanoseconds
	rev   int64    // the store revision, including this transaction's groups
	inRev bool     // the current group has taken its revision
	seq   int      // events within the current revision
}

// errNeedsDurable: a non-durable write would have moved the revision.
var errNeedsDurable = errors.New("local: write needs a durable commit")

// write runs fn in a BEGIN IMMEDIATE transaction (shared with the other
// writes queued at the time, see writeOnce) and commits it if fn returns
// nil. The revision advances as fn's changes require; watchers are woken
// after the commit.
//
// A durable write (synchronous=FULL) is fsynced before it returns; it first
// reaps the leases past their deadline. A write that leaves the revision
// alone — Grant, Renew, revoking a lease with no keys — need not be
// (synchronous=NORMAL): a power cut may lose it, which is harmless since the
// lease holders die with the machine, and the next durable commit makes it
// durable too (the WAL is synced in order). A non-durable attempt that finds
// it would move the revision is rolled back and run again durably. This
// saves most of the fsyncs of a contended claim.
func (b *backend) write(ctx context.Context, durable bool, fn func(*writer) error) error {
	err := b.writeOnce(ctx, durable, fn)
	if errors.Is(err, errNeedsDurable) {
		err = b.writeOnce(ctx, true, fn)
	}
	return err
}

// writeReq is one write waiting for its commit.
type writeReq struct {
	durable bool
	fn      func(*writer) error
	state   atomic.Int32 // reqQueued, then reqTaken by a leader or reqDropped by its caller
	done    chan struct{}
	err     error // set before done is closed
}

const (
	reqQueued int32 = iota
	reqTaken
	reqDropped
)

// writeOnce queues fn and waits for its outcome. Writes are group-committed:
// whichever waiting writer gets the write lock leads — it takes every queued
// write, runs each inside its own savepoint of one transaction (so a
// failing write is undone alone) and commits them with one fsync. A busy
// store thus pays one fsync per batch, not per write, and every write still
// takes its own revisions exactly as if it had run alone.
//
// A write taken into a batch is no longer cancelled by its ctx (an
// interrupted SQLite statement would roll back the whole batch); its caller
// waits for the batch's outcome. Until then, ctx abandons it.
func (b *backend) writeOnce(ctx context.Context, durable bool, fn func(*writer) error) error {
	if b.isClosed() {
		return board.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{durable: durable, fn: fn, done: make(chan struct{})}
	b.qmu.Lock()
	b.queue = append(b.queue, r)
	b.qmu.Unlock()
	for {
		select {
		case <-r.done:
			return r.err
		case b.writeSem <- struct{}{}:
			b.lead()
			<-b.writeSem
		case <-ctx.Done():
			if r.state.CompareAndSwap(reqQueued, reqDropped) {
				return ctx.Err()
			}
			<-r.done
			return r.err
		case <-b.life.Done():
			if r.state.CompareAndSwap(reqQueued, reqDropped) {
				return board.ErrClosed
			}
			<-r.done
			return r.err
		}
	}
}

// maxBatch bounds the writes one commit takes.
const maxBatch = 128

// lead commits the queued writes, at most maxBatch of them; the caller
// holds writeSem.
func (b *backend) lead() {
	b.qmu.Lock()
	n := min(len(b.queue), maxBatch)
	taken := b.queue[:n:n]
	b.queue = append([]*writeReq(nil), b.queue[n:]...)
	b.qmu.Unlock()
	batch := taken[:0]
	for _, r := range taken {
		if r.state.CompareAndSwap(reqQueued, reqTaken) {
			batch = append(batch, r)
		}
	}
	if len(batch) == 0 {
		return
	}
	if err := b.commit(batch); err != nil {
		for _, r := range batch {
			r.err = b.dbErr(err) // nothing of the batch was committed
		}
	}
	for _, r := range batch {
		close(r.done)
	}
}

// commit runs batch in one transaction, each write in a savepoint, and
// commits it. It sets the error of each write that failed alone; an error
// it returns undid the whole batch.
func (b *backend) commit(batch []*writeReq) error {
	if b.isClosed() {
		return board.ErrClosed
	}
	ctx := b.life
	durable := false
	for _, r := range batch {
		durable = durable || r.durable
	}
	mode := "NORMAL"
	if durable {
		mode = "FULL"
	}
	if b.wsync != mode {
		if _, err := b.wconn.ExecContext(ctx, "PRAGMA synchronous = "+mode); err != nil {
			return err
		}
		b.wsync = mode
	}
	tx, err := b.wconn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	w := &writer{ctx: ctx, tx: b.in(tx), now: b.clock.Now().UnixNano()}
	start, err := metaValue(ctx, w.tx, "revision")
	if err != nil {
		return err
	}
	w.rev = start
	if durable {
		if err := w.reap(); err != nil {
			return err
		}
	}
	alone := len(batch) == 1
	for _, r := range batch {
		if !alone {
			if _, err := w.tx.ExecContext(ctx, qSavepoint); err != nil {
				return err
			}
		}
		before := w.rev
		w.group()
		err := r.fn(w)
		if err == nil && !durable && w.rev != before {
			err = errNeedsDurable // its caller runs it again, durably
		}
		if err == nil {
			if !alone {
				if _, err := w.tx.ExecContext(ctx, qRelease); err != nil {
					return err
				}
			}
			continue
		}
		if alone {
			return err
		}
		r.err = b.dbErr(err)
		if _, err := w.tx.ExecContext(ctx, qRollbackTo); err != nil {
			return err
		}
		if _, err := w.tx.ExecContext(ctx, qRelease); err != nil {
			return err
		}
		w.rev = before
		w.group()
	}
	if w.rev != start {
		if _, err := w.tx.ExecContext(ctx, qSetRevision, w.rev); err != nil {
			return err
		}
	}
	if b.beforeCommit != nil {
		b.beforeCommit()
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	b.announce(w.rev)
	return nil
}

// group starts a new group of changes.
func (w *writer) group() { w.inRev = false }

// mark records one change in the current group and returns its revision
// and sequence number.
func (w *writer) mark() (int64, int) {
	if !w.inRev {
		w.rev++
		w.inRev, w.seq = true, 0
	}
	w.seq++
	return w.rev, w.seq
}

func (w *writer) put(key string, value []byte, lease board.LeaseID) error {
	cur, err := getKV(w.ctx, w.tx, key)
	if err != nil {
		return err
	}
	rev, seq := w.mark()
	create := cur.CreateRevision
	if create == 0 {
		create = rev
	}
	if value == nil {
		value = []byte{}
	}
	if _, err := w.tx.ExecContext(w.ctx,
		qPutKV,
		[]byte(key), value, create, rev, int64(lease)); err != nil {
		return err
	}
	_, err = w.tx.ExecContext(w.ctx,
		qPutEvent,
		rev, seq, int(board.EventPut), []byte(key), value, create, int64(lease))
	return err
}

// del deletes key if it exists.
func (w *writer) del(key string) error {
	res, err := w.tx.ExecContext(w.ctx, qDeleteKV, []byte(key))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	rev, seq := w.mark()
	_, err = w.tx.ExecContext(w.ctx,
		qDeleteEvent,
		rev, seq, int(board.EventDelete), []byte(key))
	return err
}

// leaseLive reports whether lease exists and is not past its deadline.
func (w *writer) leaseLive(lease board.LeaseID) (bool, error) {
	var deadline int64
	err := w.tx.QueryRowContext(w.ctx, qLeaseDeadline, int64(lease)).Scan(&deadline)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil && deadline > w.now, err
}

// dropLease deletes lease and its keys, as one group. (The query repeats
// the kv_lease index's condition, lease != 0, or SQLite cannot use the
// partial index and scans every key.)
func (w *writer) dropLease(lease board.LeaseID) error {
	rows, err := w.tx.QueryContext(w.ctx, qLeaseKeys, int64(lease))
	if err != nil {
		return err
	}
	var keys []string
	for rows.Next() {
		var k []byte
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return err
		}
		keys = append(keys, string(k))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	w.group()
	for _, k := range keys {
		if err := w.del(k); err != nil {
			return err
		}
	}
	_, err = w.tx.ExecContext(w.ctx, qDeleteLease, int64(lease))
	return err
}

// reap drops every lease past its deadline, oldest deadline first.
func (w *writer) reap() error {
	rows, err := w.tx.QueryContext(w.ctx, qDueLeaseIDs, w.now)
	if err != nil {
		return err
	}
	var due []board.LeaseID
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		due = append(due, board.LeaseID(id))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range due {
		if err := w.dropLease(id); err != nil {
			return err
		}
	}
	return nil
}

func (b *backend) Txn(ctx context.Context, t board.Txn) (board.TxnResult, error) {
	var res board.TxnResult
	err := b.write(ctx, true, func(w *writer) error {
		res = board.TxnResult{Succeeded: true}
		for _, c := range t.If {
			kv, err := getKV(w.ctx, w.tx, c.Key)
			if err != nil {
				return err
			}
			res.Current = append(res.Current, kv)
			if !c.Holds(kv) {
				res.Succeeded = false
			}
		}
		if !res.Succeeded {
			res.Revision = w.rev
			return nil
		}
		res.Current = nil
		for _, op := range t.Then {
			if op.Type != board.OpPut || op.Lease == board.NoLease {
				continue
			}
			live, err := w.leaseLive(op.Lease)
			if err != nil {
				return err
			}
			if !live {
				return fmt.Errorf("put %q with lease %x: %w", op.Key, op.Lease, board.ErrLeaseExpired)
			}
		}
		w.group()
		for _, op := range t.Then {
			var err error
			if op.Type == board.OpPut {
				err = w.put(op.Key, op.Value, op.Lease)
			} else {
				err = w.del(op.Key)
			}
			if err != nil {
				return err
			}
		}
		res.Revision = w.rev
		return nil
	})
	if err != nil {
		return board.TxnResult{}, err
	}
	return res, nil
}

func (b *backend) Grant(ctx context.Context, ttl time.Duration) (board.LeaseID, error) {
	var id int64
	err := b.write(ctx, false, func(w *writer) error {
		if err := w.tx.QueryRowContext(w.ctx, qNextLeaseID).Scan(&id); err != nil {
			return err
		}
		_, err := w.tx.ExecContext(w.ctx, qInsertLease, id, int64(ttl), w.now+int64(ttl))
		return err
	})
	if err != nil {
		return board.NoLease, err
	}
	b.poke()
	return board.LeaseID(id), nil
}

func (b *backend) Renew(ctx context.Context, id board.LeaseID) error {
	return b.write(ctx, false, func(w *writer) error {
		res, err := w.tx.ExecContext(w.ctx, qRenewLease, w.now, int64(id), w.now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = fmt.Errorf("renew lease %x: %w", id, board.ErrLeaseExpired)
			}
			return err
		}
		return nil
	})
}

func (b *backend) Revoke(ctx context.Context, id board.LeaseID) error {
	return b.write(ctx, false, func(w *writer) error {
		var n int
		if err := w.tx.QueryRowContext(w.ctx, qLeaseExists, int64(id)).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("revoke lease %x: %w", id, board.ErrLeaseExpired)
		}
		return w.dropLease(id)
	})
}

func (b *backend) Compact(ctx context.Context, rev int64) error {
	err := b.write(ctx, true, func(w *writer) error {
		if rev > w.rev {
			return fmt.Errorf("compact to revision %d beyond current %d: %w", rev, w.rev, board.ErrInvalid)
		}
		done, err := metaValue(w.ctx, w.tx, "compacted")
		if err != nil || rev <= done {
			return err
		}
		if _, err := w.tx.ExecContext(w.ctx, qCompactEvents, rev); err != nil {
			return err
		}
		_, err = w.tx.ExecContext(w.ctx, qSetCompacted, rev)
		return err
	})
	if err == nil {
		b.tail.reset(rev)
	}
	return err
}
