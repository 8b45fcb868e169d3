package local

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/apiary-dev/apiary/internal/board"
)

// tail is one store's in-memory copy of the newest part of the event log,
// shared by all its watches. Without it every watch read the log on every
// commit — with a few dozen watches, most of a busy store's time went to
// those reads. Now one reader at a time fetches the new revisions (all
// keys) once, and each watch filters them by its prefix in memory. A watch
// that starts, or falls, behind the copy reads the log itself.
type tail struct {
	fill sync.Mutex // held by the one reader fetching new revisions

	mu        sync.Mutex
	ok        bool          // lo and hi are set
	lo, hi    int64         // evs holds every event with lo < rev <= hi
	compacted int64         // the compaction point, as of the last fetch
	evs       []board.Event // in (rev, seq) order
}

// tailKeep bounds the events the copy holds; past it the older half is
// dropped (whole revisions at a time).
const tailKeep = 16384

// reset forgets the copy (after a compaction in this store; the next
// fetch starts it again at the head).
func (t *tail) reset(compacted int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ok, t.evs = false, nil
	t.compacted = max(t.compacted, compacted)
}

// read returns the events under prefix with revisions next..upto from the
// copy, where upto is at most watchBatch revisions past next and at most
// head; served is false when the copy does not reach back to next.
func (t *tail) read(prefix string, next int64) (evs []board.Event, upto, head int64, served bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ok || next <= t.lo {
		return nil, 0, 0, false, nil
	}
	if next < t.compacted {
		return nil, 0, 0, false, fmt.Errorf("watch from revision %d, compacted at %d: %w", next, t.compacted, board.ErrCompacted)
	}
	head = t.hi
	upto = min(head, next+watchBatch-1)
	if upto < next {
		return nil, upto, head, true, nil
	}
	// The first event at or after next, by binary search on rev.
	i, j := 0, len(t.evs)
	for i < j {
		h := int(uint(i+j) >> 1)
		if t.evs[h].Revision < next {
			i = h + 1
		} else {
			j = h
		}
	}
	for _, ev := range t.evs[i:] {
		if ev.Revision > upto {
			break
		}
		if strings.HasPrefix(ev.Key, prefix) {
			evs = append(evs, ev)
		}
	}
	return evs, upto, head, true, nil
}

// catchUp brings the copy up to revision want (or as far as the store has
// got), reading only what no other caller is already reading.
func (b *backend) catchUp(ctx context.Context, want int64) error {
	t := &b.tail
	t.fill.Lock()
	defer t.fill.Unlock()
	t.mu.Lock()
	ok, hi := t.ok, t.hi
	t.mu.Unlock()
	if ok && hi >= want {
		return nil // another caller fetched it meanwhile
	}
	tx, err := b.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	head, compacted, err := logBounds(ctx, b.in(tx))
	if err != nil {
		return err
	}
	if !ok {
		// Start the copy at the head: the events before it are read from
		// the log by whoever needs them.
		t.mu.Lock()
		t.ok, t.lo, t.hi, t.evs = true, head, head, nil
		t.compacted = max(t.compacted, compacted)
		t.mu.Unlock()
		return nil
	}
	if head <= hi {
		return nil
	}
	rows, err := b.in(tx).QueryContext(ctx, qTail, hi, head)
	if err != nil {
		return err
	}
	defer rows.Close()
	var evs []board.Event
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			return err
		}
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ok || t.hi != hi {
		return nil // reset by a compaction meanwhile: the next fetch starts over
	}
	t.evs = append(t.evs, evs...)
	t.hi = head
	t.compacted = max(t.compacted, compacted)
	if len(t.evs) > tailKeep {
		// Drop the older half, ending on a revision boundary.
		cut := len(t.evs) / 2
		for cut < len(t.evs) && t.evs[cut].Revision == t.evs[cut-1].Revision {
			cut++
		}
		t.lo = t.evs[cut-1].Revision
		t.evs = append([]board.Event(nil), t.evs[cut:]...)
	}
	return nil
}

// logBounds reads the current revision and the compaction point.
func logBounds(ctx context.Context, q querier) (head, compacted int64, err error) {
	if head, err = metaValue(ctx, q, "revision"); err != nil {
		return 0, 0, err
	}
	compacted, err = metaValue(ctx, q, "compacted")
	return head, compacted, err
}

// scanEvent reads one row of rev, type, key, value, create_rev, lease.
func scanEvent(rows *sql.Rows) (board.Event, error) {
	var ev board.Event
	var typ int
	var key []byte
	var lease int64
	if err := rows.Scan(&ev.Revision, &typ, &key, &ev.Value, &ev.CreateRevision, &lease); err != nil {
		return board.Event{}, err
	}
	ev.Type, ev.Key, ev.Lease = board.EventType(typ), string(key), board.LeaseID(lease)
	return ev, nil
}
