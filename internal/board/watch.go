package board

import (
	"context"
	"errors"
	"fmt"
)

// WatchResponse is one delivery from Watch: the events of one or more whole
// revisions, in revision order, or — in the last response only — the error
// that ended the watch.
type WatchResponse struct {
	Events []Event
	Err    error
}

// WatchOptions narrow a watch at its source: the events a watcher has no
// use for are never sent to it (on etcd, the server drops them), which is
// what a watch costs the board and the watcher. The zero value delivers
// everything.
type WatchOptions struct {
	// NoPut leaves out puts; NoDelete leaves out deletions (lease expiries
	// included). A watcher that deletes the keys it follows itself — a
	// gatekeeper its shard's requests, a host its own claims' records —
	// needs no delete events. Setting both is ErrInvalid.
	NoPut, NoDelete bool
}

// keep reports whether opts delivers ev.
func (o WatchOptions) keep(ev Event) bool {
	return !(o.NoPut && ev.Type == EventPut || o.NoDelete && ev.Type == EventDelete)
}

// Filter returns the events of evs that opts delivers, reusing evs's
// storage; for backends that cannot filter at the source.
func (o WatchOptions) Filter(evs []Event) []Event {
	if !o.NoPut && !o.NoDelete {
		return evs
	}
	out := evs[:0]
	for _, ev := range evs {
		if o.keep(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// Watch streams the changes to keys under prefix ("" for all) from revision
// from on; from 0 means "every change committed after Watch returns". Every
// change is delivered
// exactly once, in revision order, and a revision's events are never split
// across responses, so a consumer that has handled every response up to
// revision R resumes without a gap or a repeat by watching from R+1; likewise
// after List or Revision returned R.
//
// The channel closes when ctx is done (with no error response), or after a
// final response whose Err is ErrCompacted (from is older than the kept
// history), ErrClosed (the store closed), or a backend failure. The watch
// goroutine is owned by ctx: cancel it or drain the channel.
func (s *Store) Watch(ctx context.Context, prefix string, from int64) <-chan WatchResponse {
	return s.WatchWith(ctx, prefix, from, WatchOptions{})
}

// WatchWith is Watch with the event types opts leaves out never sent. A
// revision whose every change is left out is not delivered at all; a
// consumer resumes, as with Watch, from the revision after the last one it
// handled.
func (s *Store) WatchWith(ctx context.Context, prefix string, from int64, opts WatchOptions) <-chan WatchResponse {
	ch := make(chan WatchResponse)
	fail := func(err error) <-chan WatchResponse {
		go func() {
			defer close(ch)
			deliver(ctx, ch, WatchResponse{Err: err})
		}()
		return ch
	}
	if opts.NoPut && opts.NoDelete {
		return fail(fmt.Errorf("watch %q leaving out every event: %w", prefix, ErrInvalid))
	}
	if from == 0 {
		rev, err := s.Revision(ctx)
		if err != nil {
			return fail(err)
		}
		from = rev + 1
	}
	if !s.own() {
		return fail(ErrClosed)
	}
	// The backend loop is bounded by both ctx and the store's life, so Close
	// waits for it; the final error delivery is bounded by ctx alone.
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.life, cancel)
	go func() {
		defer close(ch)
		err := s.b.Watch(wctx, prefix, from, opts, func(evs []Event) bool {
			return deliver(wctx, ch, WatchResponse{Events: evs})
		})
		stop()
		cancel()
		s.wg.Done()
		switch {
		case ctx.Err() != nil:
			return
		case s.closed() && (err == nil || errors.Is(err, context.Canceled)):
			err = ErrClosed
		case err == nil:
			return
		}
		deliver(ctx, ch, WatchResponse{Err: err})
	}()
	return ch
}

func deliver(ctx context.Context, ch chan<- WatchResponse, r WatchResponse) bool {
	select {
	case ch <- r:
		return true
	case <-ctx.Done():
		return false
	}
}
