package boardtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// change is a write as its writer saw it, or an event as a watcher saw it.
type change struct {
	typ board.EventType
	key string
	rev int64
	val string
}

func (c change) String() string { return fmt.Sprintf("%v %s@%d=%q", c.typ, c.key, c.rev, c.val) }

func testWatchResume(t *testing.T, e *env) {
	ctx := e.ctx(t)
	reader := e.connect()
	// Writes before the read must not be seen.
	must(reader.Put(ctx, "w/old", []byte("old"), board.NoLease))(t)
	kvs, r0 := must2(reader.List(ctx, "w/"))(t)
	if len(kvs) != 1 {
		t.Fatalf("List before writers = %v", keysOf(kvs))
	}

	const writers, perWriter = 4, 30
	var mu sync.Mutex
	var written []change
	var wg sync.WaitGroup
	for w := range writers {
		s := e.connect()
		wg.Go(func() {
			for i := range perWriter {
				// Pace the writers so the reader follows them live, not
				// only through history.
				time.Sleep(time.Millisecond)
				key := fmt.Sprintf("w/%d/%d", w, i%4)
				val := fmt.Sprintf("%d.%d", w, i)
				var c change
				var err error
				if i%5 == 4 {
					c = change{typ: board.EventDelete, key: key}
					c.rev, err = s.Delete(ctx, key)
				} else {
					c = change{typ: board.EventPut, key: key, val: val}
					c.rev, err = s.Put(ctx, key, []byte(val), board.NoLease)
				}
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				mu.Lock()
				written = append(written, c)
				mu.Unlock()
			}
		})
		// An unrelated writer's events must not appear under w/.
		wg.Go(func() {
			for i := range 5 {
				if _, err := s.Put(ctx, fmt.Sprint("elsewhere/", w, "/", i), nil, board.NoLease); err != nil {
					t.Errorf("unrelated writer: %v", err)
				}
			}
		})
	}

	// The reader follows in short segments, each resumed from the last
	// revision it finished, while the writers run.
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	var seen []change
	from := r0 + 1
	finished := func() bool {
		select {
		case <-done:
			return len(seen) >= len(written) // written is final once done
		default:
			return false
		}
	}
segments:
	for segment := 0; !finished(); segment++ {
		wctx, cancel := context.WithCancel(ctx)
		ch := reader.Watch(wctx, "w/", from)
		for n := 0; n <= segment%3; n++ {
			var resp board.WatchResponse
			var ok bool
			select {
			case resp, ok = <-ch:
			case <-done:
				if finished() {
					cancel()
					break segments
				}
				resp, ok = <-ch
			}
			if !ok || resp.Err != nil {
				cancel()
				t.Fatalf("watch ended with %d of the writers' changes seen: %v (context: %v)", len(seen), resp.Err, ctx.Err())
			}
			for _, ev := range resp.Events {
				seen = append(seen, change{typ: ev.Type, key: ev.Key, rev: ev.Revision, val: string(ev.Value)})
			}
			from = resp.Events[len(resp.Events)-1].Revision + 1
		}
		cancel()
	}
	if t.Failed() {
		return
	}
	for i := 1; i < len(seen); i++ {
		if seen[i].rev < seen[i-1].rev {
			t.Fatalf("events out of order: %v then %v", seen[i-1], seen[i])
		}
	}
	byRev := func(a, b change) int {
		if a.rev != b.rev {
			return int(a.rev - b.rev)
		}
		return 0
	}
	slices.SortStableFunc(written, byRev)
	if !slices.Equal(seen, written) {
		t.Fatalf("watch saw %d events, writers made %d changes\nseen:    %v\nwritten: %v", len(seen), len(written), seen, written)
	}
	// Replaying the events on the first read gives the final state.
	state := map[string]string{}
	for _, kv := range kvs {
		state[kv.Key] = string(kv.Value)
	}
	for _, c := range seen {
		if c.typ == board.EventPut {
			state[c.key] = c.val
		} else {
			delete(state, c.key)
		}
	}
	final, _ := must2(reader.List(ctx, "w/"))(t)
	if len(final) != len(state) {
		t.Fatalf("replayed state has %d keys, List has %d", len(state), len(final))
	}
	for _, kv := range final {
		if v, ok := state[kv.Key]; !ok || v != string(kv.Value) {
			t.Fatalf("replayed %s = %q (present %v), List says %q", kv.Key, v, ok, kv.Value)
		}
	}
}

func testWatchFromNow(t *testing.T, e *env) {
	s := e.connect()
	ctx := e.ctx(t)
	must(s.Put(ctx, "n/before", []byte("b"), board.NoLease))(t)
	ch := s.Watch(ctx, "n/", 0)
	rev := must(s.Put(ctx, "n/after", []byte("a"), board.NoLease))(t)
	ev, seen := awaitEvent(t, ctx, ch, func(ev board.Event) bool { return ev.Key == "n/after" })
	if ev.Revision != rev || string(ev.Value) != "a" || ev.Type != board.EventPut || len(seen) != 1 {
		t.Fatalf("watch from now saw %+v, want only n/after at %d", seen, rev)
	}
	// A watch from a future revision waits for it. (Revisions are
	// store-wide: on a shared backend another writer may take rev+1.)
	future := s.Watch(ctx, "n/", rev+2)
	r1 := must(s.Put(ctx, "n/1", nil, board.NoLease))(t)
	r2 := must(s.Put(ctx, "n/2", nil, board.NoLease))(t)
	want := change{typ: board.EventPut, key: "n/2", rev: r2}
	if r1 >= rev+2 {
		want = change{typ: board.EventPut, key: "n/1", rev: r1}
	}
	ev, _ = awaitEvent(t, ctx, future, func(board.Event) bool { return true })
	if got := (change{typ: ev.Type, key: ev.Key, rev: ev.Revision, val: string(ev.Value)}); got != want {
		t.Fatalf("watch from %d first saw %v, want %v", rev+2, got, want)
	}
}

func testWatchClosed(t *testing.T, e *env) {
	s := e.connect()
	ctx := e.ctx(t)
	ch := s.Watch(ctx, "c/", 0)
	rev := must(s.Put(ctx, "c/1", nil, board.NoLease))(t)
	awaitEvent(t, ctx, ch, func(ev board.Event) bool { return ev.Revision == rev })
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case resp, ok := <-ch:
		if !ok || !errorIs(resp.Err, board.ErrClosed) {
			t.Fatalf("watch after Close: %+v (open %v), want ErrClosed", resp, ok)
		}
	case <-ctx.Done():
		t.Fatal("watch did not end on Close")
	}
	if _, ok := <-ch; ok {
		t.Fatal("watch channel still open after its error")
	}
	_, err := s.Put(ctx, "c/2", nil, board.NoLease)
	wantErr(t, "Put after Close", err, board.ErrClosed)
	resp := <-s.Watch(ctx, "c/", 0)
	wantErr(t, "Watch after Close", resp.Err, board.ErrClosed)
}

func testCompaction(t *testing.T, e *env) {
	s := e.connect()
	ctx := e.ctx(t)
	r1 := must(s.Put(ctx, "z/1", []byte("1"), board.NoLease))(t)
	r2 := must(s.Put(ctx, "z/2", []byte("2"), board.NoLease))(t)
	r3 := must(s.Put(ctx, "z/3", []byte("3"), board.NoLease))(t)
	if err := s.Compact(ctx, r2); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	resp := <-s.Watch(ctx, "z/", r1)
	wantErr(t, "Watch from a compacted revision", resp.Err, board.ErrCompacted)
	ev, _ := awaitEvent(t, ctx, s.Watch(ctx, "z/", r2), func(board.Event) bool { return true })
	if ev.Key != "z/2" || ev.Revision != r2 {
		t.Fatalf("first event from the compaction point = %+v, want z/2 at %d", ev, r2)
	}
	if err := s.Compact(ctx, r1); err != nil {
		t.Fatalf("Compact below an earlier compaction: %v, want nil", err)
	}
	if _, err := s.Get(ctx, "z/1"); err != nil {
		t.Fatalf("Compact lost current data: %v", err)
	}
	ev, _ = awaitEvent(t, ctx, s.Watch(ctx, "z/", r3), func(board.Event) bool { return true })
	if ev.Key != "z/3" {
		t.Fatalf("watch from %d = %+v", r3, ev)
	}
}
