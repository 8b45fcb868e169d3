package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/apiary-dev/apiary/internal/board"
)

// rewatchPause spaces attempts to re-establish a broken watch.
const rewatchPause = 100 * time.Millisecond

// Watch follows an etcd watch on prefix. etcd delivers each revision's
// events in one response (fragmentation is off), in order. If the stream
// ends while ctx is live — its member died and the client gave up on it —
// Watch starts a new one from the revision after the last delivered.
func (b *backend) Watch(ctx context.Context, prefix string, from int64, opts board.WatchOptions, yield func([]board.Event) bool) error {
	if from <= 0 {
		rev, err := b.Revision(ctx)
		if err != nil {
			return err
		}
		from = rev + 1
	}
	next := from
	for {
		stop, err := b.watchOnce(ctx, prefix, &next, opts, yield)
		if stop || err != nil {
			return err
		}
		if b.life.Err() != nil {
			return board.ErrClosed
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.life.Done():
			return board.ErrClosed
		case <-time.After(rewatchPause):
		}
	}
}

// watchOnce runs one etcd watch from *next, advancing *next past every
// delivered revision. It reports stop when the consumer is done, and a
// non-nil error when the watch must end; (false, nil) asks for a new watch.
func (b *backend) watchOnce(ctx context.Context, prefix string, next *int64, opts board.WatchOptions, yield func([]board.Event) bool) (stop bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wopts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithRev(*next)}
	if opts.NoPut {
		wopts = append(wopts, clientv3.WithFilterPut())
	}
	if opts.NoDelete {
		wopts = append(wopts, clientv3.WithFilterDelete())
	}
	for resp := range b.watch.Watch(wctx, prefix, wopts...) {
		if err := resp.Err(); err != nil {
			if resp.CompactRevision != 0 || errors.Is(err, rpctypes.ErrCompacted) {
				return true, fmt.Errorf("watch from revision %d, compacted at %d: %w", *next, resp.CompactRevision, board.ErrCompacted)
			}
			return false, nil // broken stream: re-watch from *next
		}
		if len(resp.Events) == 0 {
			continue // progress notification or creation acknowledgement
		}
		evs := make([]board.Event, 0, len(resp.Events))
		for _, e := range resp.Events {
			ev := board.Event{Key: string(e.Kv.Key), Revision: e.Kv.ModRevision}
			switch e.Type {
			case mvccpb.PUT:
				ev.Type, ev.Value = board.EventPut, e.Kv.Value
				ev.CreateRevision, ev.Lease = e.Kv.CreateRevision, board.LeaseID(e.Kv.Lease)
			case mvccpb.DELETE:
				ev.Type = board.EventDelete
			}
			if ev.Revision < *next {
				continue // never deliver a revision twice
			}
			evs = append(evs, ev)
		}
		if len(evs) == 0 {
			continue
		}
		if !yield(evs) {
			return true, nil
		}
		*next = evs[len(evs)-1].Revision + 1
	}
	return false, nil
}
