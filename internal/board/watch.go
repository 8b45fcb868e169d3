package board

import (
	"context"
	"errors"
)

// WatchResponse is one delivery from Watch: the events of one or more whole
// revisions, in revision order, or — in the last response only — the error
// that ended the watch.
type WatchResponse struct {
	Events []Event
	Err    error
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
	ch := make(chan WatchResponse)
	fail := func(err error) <-chan WatchResponse {
		go func() {
			defer close(ch)
			deliver(ctx, ch, WatchResponse{Err: err})
		}()
		return ch
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
		err := s.b.Watch(wctx, prefix, from, func(evs []Event) bool {
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
