package boardtest

import (
	"context"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// collect reads ch until it has n events, failing on an error response, a
// closed channel or ctx's end.
func collect(t *testing.T, ctx context.Context, ch <-chan board.WatchResponse, n int) []board.Event {
	t.Helper()
	var out []board.Event
	for len(out) < n {
		select {
		case resp, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed after %d of %d events", len(out), n)
			}
			if resp.Err != nil {
				t.Fatalf("watch failed after %d of %d events: %v", len(out), n, resp.Err)
			}
			out = append(out, resp.Events...)
		case <-ctx.Done():
			t.Fatalf("%d of %d events before %v", len(out), n, ctx.Err())
		}
	}
	return out
}

// testWatchFilter: a watch that leaves out puts or deletions never sees
// them — lease expiries included — and still sees every other change once,
// in order; one that leaves out everything is refused.
func testWatchFilter(t *testing.T, e *env) {
	ctx := e.ctx(t)
	s := e.connect()
	from := must(s.Revision(ctx))(t) + 1
	lease := must(s.Grant(ctx, time.Hour))(t)
	var puts, dels []int64
	put := func(k string, l board.LeaseID) { puts = append(puts, must(s.Put(ctx, k, []byte(k), l))(t)) }
	put("f/a", board.NoLease)
	put("f/b", lease)
	put("f/a", board.NoLease)
	dels = append(dels, must(s.Delete(ctx, "f/a"))(t))
	put("f/c", board.NoLease)
	if err := s.Revoke(ctx, lease); err != nil { // deletes f/b
		t.Fatal(err)
	}
	// The revocation's deletion has a revision between f/c's put and the
	// store's revision now: the revision is the whole store's, and a test
	// running beside this one may have written in between.
	revokedBy := must(s.Revision(ctx))(t)
	dels = append(dels, revokedBy)
	put("f/d", board.NoLease)

	onlyPuts := collect(t, ctx, s.WatchWith(ctx, "f/", from, board.WatchOptions{NoDelete: true}), len(puts))
	onlyDels := collect(t, ctx, s.WatchWith(ctx, "f/", from, board.WatchOptions{NoPut: true}), len(dels))
	check := func(name string, evs []board.Event, typ board.EventType, revs []int64) {
		t.Helper()
		if len(evs) != len(revs) {
			t.Fatalf("%s: %d events, want %d", name, len(evs), len(revs))
		}
		for i, ev := range evs {
			if ev.Type != typ || ev.Revision != revs[i] {
				t.Fatalf("%s: event %d = %+v, want a %v at revision %d", name, i, ev, typ, revs[i])
			}
		}
	}
	check("puts only", onlyPuts, board.EventPut, puts)
	revoked := puts[len(puts)-2] // f/c's put, the last change before the revocation
	if ev := onlyDels[len(onlyDels)-1]; len(onlyDels) == len(dels) && ev.Type == board.EventDelete && ev.Revision > revoked && ev.Revision <= revokedBy {
		dels[len(dels)-1] = ev.Revision
	}
	check("deletions only", onlyDels, board.EventDelete, dels)
	if onlyDels[1].Key != "f/b" {
		t.Fatalf("the lease's end deleted %s, want f/b", onlyDels[1].Key)
	}
	// Resuming after the last delivered revision sees the later changes
	// only, filtered the same way.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := s.WatchWith(wctx, "f/", onlyDels[1].Revision+1, board.WatchOptions{NoPut: true})
	put("f/e", board.NoLease)
	last := must(s.Delete(ctx, "f/e"))(t)
	if evs := collect(t, ctx, ch, 1); len(evs) != 1 || evs[0].Revision != last || evs[0].Type != board.EventDelete {
		t.Fatalf("resumed deletions-only watch: %+v, want f/e's deletion at %d", evs, last)
	}
	for resp := range s.WatchWith(ctx, "f/", from, board.WatchOptions{NoPut: true, NoDelete: true}) {
		wantErr(t, "a watch that leaves out everything", resp.Err, board.ErrInvalid)
	}
}
