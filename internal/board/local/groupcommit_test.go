package local

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// openBackend opens a fresh local board, closed when the test ends.
func openBackend(t *testing.T) (*backend, *board.Store) {
	t.Helper()
	b, err := open(t.Context(), filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := board.New(b, board.Options{})
	t.Cleanup(func() { s.Close() })
	return b, s
}

// checkPrepared fails the test if any query ran unprepared.
func checkPrepared(t *testing.T, b *backend) {
	t.Helper()
	if n := b.stmts.misses.Load(); n != 0 {
		t.Fatalf("%d queries ran unprepared", n)
	}
}

// TestGroupCommit: many writers at once on one store, so that their writes
// share commits. A write that fails (a put under a revoked lease) or whose
// comparison fails is undone alone; every other write lands whole, with a
// revision of its own, and a watch sees each exactly once, in order. Readers
// run meanwhile, more of them than the pool has connections (the statement
// cache once deadlocked the pool that way).
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	b, s := openBackend(t)
	dead, err := s.Grant(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke(ctx, dead); err != nil {
		t.Fatal(err)
	}
	start, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := s.Watch(ctx, "gc/", start+1)

	const writers, each = 24, 25
	type outcome struct {
		key string
		rev int64
		err error
		ok  bool // the comparison held
	}
	outs := make([][]outcome, writers)
	var wg sync.WaitGroup
	stopReads := make(chan struct{})
	var readErr error
	var readMu sync.Mutex
	for range 16 { // readers: twice the pool's connections
		wg.Go(func() {
			for {
				select {
				case <-stopReads:
					return
				default:
				}
				if _, _, err := s.List(ctx, "gc/"); err != nil {
					readMu.Lock()
					readErr = err
					readMu.Unlock()
					return
				}
			}
		})
	}
	var ww sync.WaitGroup
	for w := range writers {
		ww.Go(func() {
			for i := range each {
				key := fmt.Sprintf("gc/%02d/%02d", w, i)
				o := outcome{key: key}
				switch i % 5 {
				case 3: // fails: the lease is gone
					_, o.err = s.Put(ctx, key, []byte("x"), dead)
				case 4: // comparison fails: the key is not absent
					var res board.TxnResult
					res, o.err = s.Txn(ctx, board.Txn{If: []board.Cmp{board.Absent(fmt.Sprintf("gc/%02d/%02d", w, i-2))},
						Then: []board.Op{board.PutOp(key, []byte("never"), board.NoLease)}})
					o.rev, o.ok = res.Revision, res.Succeeded
				default:
					var res board.TxnResult
					res, o.err = s.Txn(ctx, board.Txn{Then: []board.Op{
						board.PutOp(key, []byte(key), board.NoLease), board.PutOp(key+"/twin", []byte(key), board.NoLease)}})
					o.rev, o.ok = res.Revision, res.Succeeded
				}
				outs[w] = append(outs[w], o)
			}
		})
	}
	ww.Wait()
	close(stopReads)
	wg.Wait()
	if readErr != nil {
		t.Fatalf("reader: %v", readErr)
	}

	revs := map[int64]string{}
	want := 0
	for _, os := range outs {
		for i, o := range os {
			switch i % 5 {
			case 3:
				if !errors.Is(o.err, board.ErrLeaseExpired) {
					t.Fatalf("%s under a revoked lease: %v, want ErrLeaseExpired", o.key, o.err)
				}
				if _, err := s.Get(ctx, o.key); !errors.Is(err, board.ErrNotFound) {
					t.Fatalf("%s: the failed write left %v", o.key, err)
				}
			case 4:
				if o.err != nil || o.ok {
					t.Fatalf("%s: comparison should fail cleanly: ok=%v err=%v", o.key, o.ok, o.err)
				}
				if _, err := s.Get(ctx, o.key); !errors.Is(err, board.ErrNotFound) {
					t.Fatalf("%s: a failed comparison wrote: %v", o.key, err)
				}
			default:
				if o.err != nil || !o.ok {
					t.Fatalf("%s: %v", o.key, o.err)
				}
				if other, dup := revs[o.rev]; dup {
					t.Fatalf("%s and %s share revision %d", o.key, other, o.rev)
				}
				revs[o.rev] = o.key
				for _, k := range []string{o.key, o.key + "/twin"} {
					kv, err := s.Get(ctx, k)
					if err != nil || kv.ModRevision != o.rev || string(kv.Value) != o.key {
						t.Fatalf("%s: %+v, %v; want revision %d", k, kv, err, o.rev)
					}
				}
				want++
			}
		}
	}
	end, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := end - start; got != int64(want) {
		t.Fatalf("revision moved by %d for %d successful writes", got, want)
	}
	seen := map[int64]int{}
	last := start
	for len(seen) < want {
		resp, ok := <-events
		if !ok || resp.Err != nil {
			t.Fatalf("watch ended after %d of %d revisions: %v", len(seen), want, resp.Err)
		}
		for _, ev := range resp.Events {
			if ev.Revision < last {
				t.Fatalf("watch went back from %d to %d", last, ev.Revision)
			}
			last = ev.Revision
			seen[ev.Revision]++
			if key, ok := revs[ev.Revision]; !ok || (ev.Key != key && ev.Key != key+"/twin") {
				t.Fatalf("event %s at %d, which no successful write took", ev.Key, ev.Revision)
			}
		}
	}
	for rev, n := range seen {
		if n != 2 {
			t.Fatalf("revision %d: %d events, want 2", rev, n)
		}
	}
	checkPrepared(t, b)
}

// TestEveryQueryPrepared runs every kind of call — and a watch reading the
// log from the start, past the shared tail — and checks none of its
// queries was missing from the prepared set.
func TestEveryQueryPrepared(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b, s := openBackend(t)
	if _, err := s.Put(ctx, "p/a", []byte("1"), board.NoLease); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(ctx, "p-task", "w", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Renew(ctx, c.Lease); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, c); err != nil {
		t.Fatal(err)
	}
	short, err := s.Grant(ctx, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "p/short", nil, short); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if _, err := s.Delete(ctx, "p/a"); err != nil { // a durable write: reaps the lapsed lease first
		t.Fatal(err)
	}
	for _, prefix := range []string{"", "p/", "\xff"} {
		if _, _, err := s.List(ctx, prefix); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for resp := range s.Watch(wctx, "p/", 1) {
		if resp.Err != nil {
			t.Fatal(resp.Err)
		}
		if resp.Events[len(resp.Events)-1].Revision >= rev-1 {
			break
		}
	}
	cancel()
	if err := s.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	checkPrepared(t, b)
}

// TestQueuedWriteAbandoned: a write still waiting for a commit when its
// context ends returns the context's error and is never applied, even
// though a later commit runs while it is still in the queue.
func TestQueuedWriteAbandoned(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b, s := openBackend(t)
	b.writeSem <- struct{}{} // hold the write lock: nothing can lead a commit
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Put(wctx, "abandoned", []byte("x"), board.NoLease)
		errc <- err
	}()
	for { // wait until it is queued
		b.qmu.Lock()
		n := len(b.queue)
		b.qmu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned write returned %v, want context.Canceled", err)
	}
	<-b.writeSem
	if _, err := s.Put(ctx, "later", []byte("y"), board.NoLease); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "abandoned"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("the abandoned write was applied: %v", err)
	}
	if kv, err := s.Get(ctx, "later"); err != nil || string(kv.Value) != "y" {
		t.Fatalf("later write: %+v, %v", kv, err)
	}
}
