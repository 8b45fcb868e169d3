package layout

import (
	"context"
	"errors"
	"strings"

	"github.com/apiary-dev/apiary/internal/board"
)

// Follow lists prefix, applies every key as a put, then streams later
// changes: each response becomes one func to run on the caller's goroutine
// (so the caller's state needs no lock). The channel closes when ctx ends
// or the watch fails.
func Follow(ctx context.Context, st *board.Store, prefix string, apply func(board.Event)) (<-chan func(), error) {
	return FollowBatches(ctx, st, prefix, board.WatchOptions{}, func(evs []board.Event) {
		for _, ev := range evs {
			apply(ev)
		}
	})
}

// FollowBatches is Follow with whole responses — the events of one or
// more whole revisions at a time (the initial listing is one batch) — and
// with the events opts leaves out never sent.
func FollowBatches(ctx context.Context, st *board.Store, prefix string, opts board.WatchOptions, apply func([]board.Event)) (<-chan func(), error) {
	kvs, rev, err := st.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	evs := make([]board.Event, 0, len(kvs))
	for _, kv := range kvs {
		evs = append(evs, board.Event{Type: board.EventPut, Key: kv.Key, Value: kv.Value, Revision: kv.ModRevision,
			CreateRevision: kv.CreateRevision, Lease: kv.Lease})
	}
	apply(evs)
	out := make(chan func())
	ch := st.WatchWith(ctx, prefix, rev+1, opts)
	go func() {
		defer close(out)
		for resp := range ch {
			if resp.Err != nil {
				return
			}
			evs := resp.Events
			select {
			case out <- func() { apply(evs) }:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func ErrWatchEnded(ctx context.Context) error {
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("swarm: a board watch ended")
}

// LastSeg returns the unescaped last segment of key.
func LastSeg(key string) string {
	s := key[strings.LastIndexByte(key, '/')+1:]
	return Unesc(s)
}
