package local

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/apiary-dev/apiary/internal/board"
)

// watchBatch bounds how many revisions one read of the event log spans.
const watchBatch = 256

// Watch reads the event log from revision from on, then waits for the next
// announcement (a local commit, or the reaper noticing another process's)
// and reads again.
func (b *backend) Watch(ctx context.Context, prefix string, from int64, opts board.WatchOptions, yield func([]board.Event) bool) error {
	if from <= 0 {
		rev, err := b.Revision(ctx)
		if err != nil {
			return err
		}
		from = rev + 1
	}
	b.watches.Add(1)
	defer b.watches.Add(-1)
	b.poke() // start polling for other processes' writes
	next := from
	for {
		wake := b.changes() // before reading, so no announcement is missed
		evs, upto, head, err := b.readEvents(ctx, prefix, next)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return b.dbErr(err)
		}
		if evs = opts.Filter(evs); len(evs) > 0 && !yield(evs) {
			return nil
		}
		if upto >= next {
			next = upto + 1
		}
		if next <= head {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.life.Done():
			return board.ErrClosed
		case <-wake:
		}
	}
}

// readEvents returns the events under prefix with revisions next..upto, where
// upto is at most watchBatch revisions past next and at most head, the
// current revision. It fails with ErrCompacted if next is below the
// compaction point. Recent revisions come from the store's shared copy of
// the log's tail; older ones from the log itself.
func (b *backend) readEvents(ctx context.Context, prefix string, next int64) (evs []board.Event, upto, head int64, err error) {
	b.mu.Lock()
	want := b.seen
	b.mu.Unlock()
	if err := b.catchUp(ctx, want); err != nil {
		return nil, 0, 0, err
	}
	evs, upto, head, served, err := b.tail.read(prefix, next)
	if served || err != nil {
		return evs, upto, head, err
	}
	return b.readLog(ctx, prefix, next)
}

// readLog is readEvents from the event log.
func (b *backend) readLog(ctx context.Context, prefix string, next int64) (evs []board.Event, upto, head int64, err error) {
	tx, err := b.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, 0, err
	}
	defer tx.Rollback()
	head, compacted, err := logBounds(ctx, b.in(tx))
	if err != nil {
		return nil, 0, 0, err
	}
	if next < compacted {
		return nil, 0, 0, fmt.Errorf("watch from revision %d, compacted at %d: %w", next, compacted, board.ErrCompacted)
	}
	upto = min(head, next+watchBatch-1)
	if upto < next {
		return nil, upto, head, nil
	}
	cond, args := prefixRange(prefix)
	rows, err := b.in(tx).QueryContext(ctx, logQuery(cond), append([]any{next, upto}, args...)...)
	if err != nil {
		return nil, 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			return nil, 0, 0, err
		}
		evs = append(evs, ev)
	}
	return evs, upto, head, rows.Err()
}
