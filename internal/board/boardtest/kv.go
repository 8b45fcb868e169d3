package boardtest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

func testKV(t *testing.T, e *env) {
	s := e.connect()
	ctx := e.ctx(t)
	_, err := s.Get(ctx, "a/missing")
	wantErr(t, "Get of a missing key", err, board.ErrNotFound)

	start := must(s.Revision(ctx))(t)
	var last int64 = start
	keys := []string{"a/2", "a/1", "a/10", "b/1", "a"}
	for i, k := range keys {
		rev := must(s.Put(ctx, k, []byte(fmt.Sprint("v", i)), board.NoLease))(t)
		if rev <= last {
			t.Fatalf("Put %s: revision %d not above previous %d", k, rev, last)
		}
		last = rev
		kv := must(s.Get(ctx, k))(t)
		if kv.CreateRevision != rev || kv.ModRevision != rev || string(kv.Value) != fmt.Sprint("v", i) {
			t.Fatalf("Get %s = %+v, want value v%d at revision %d", k, kv, i, rev)
		}
	}
	kvs, rev := must2(s.List(ctx, "a/"))(t)
	if rev < last {
		t.Fatalf("List revision %d below last write %d", rev, last)
	}
	got := keysOf(kvs)
	if want := []string{"a/1", "a/10", "a/2"}; !slices.Equal(got, want) {
		t.Fatalf("List(a/) = %v, want %v", got, want)
	}
	all, _ := must2(s.List(ctx, ""))(t)
	if len(all) != len(keys) {
		t.Fatalf("List(\"\") has %d keys, want %d", len(all), len(keys))
	}

	// Overwrite keeps CreateRevision, moves ModRevision.
	first := must(s.Get(ctx, "a/1"))(t)
	rev = must(s.Put(ctx, "a/1", nil, board.NoLease))(t)
	kv := must(s.Get(ctx, "a/1"))(t)
	if kv.CreateRevision != first.CreateRevision || kv.ModRevision != rev || len(kv.Value) != 0 {
		t.Fatalf("after overwrite: %+v, want create %d mod %d empty value", kv, first.CreateRevision, rev)
	}
	del := must(s.Delete(ctx, "a/1"))(t)
	if del <= rev {
		t.Fatalf("Delete revision %d not above %d", del, rev)
	}
	_, err = s.Get(ctx, "a/1")
	wantErr(t, "Get after Delete", err, board.ErrNotFound)
	_, err = s.Delete(ctx, "a/1")
	wantErr(t, "Delete of a missing key", err, board.ErrNotFound)
	// Re-creating starts a new life: a new CreateRevision.
	rev = must(s.Put(ctx, "a/1", []byte("again"), board.NoLease))(t)
	if kv := must(s.Get(ctx, "a/1"))(t); kv.CreateRevision != rev {
		t.Fatalf("re-created key has CreateRevision %d, want %d", kv.CreateRevision, rev)
	}
	// A second client sees the same board.
	other := e.connect()
	if kv := must(other.Get(ctx, "a/1"))(t); string(kv.Value) != "again" {
		t.Fatalf("second client reads %q, want %q", kv.Value, "again")
	}
}

// must2 is must for functions with two results.
func must2[A, B any](a A, b B, err error) func(t *testing.T) (A, B) {
	return func(t *testing.T) (A, B) {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return a, b
	}
}

func keysOf(kvs []board.KV) []string {
	var out []string
	for _, kv := range kvs {
		out = append(out, kv.Key)
	}
	return out
}

func testCAS(t *testing.T, e *env) {
	s := e.connect()
	ctx := e.ctx(t)
	r1 := must(s.CAS(ctx, "k", []byte("1"), 0, board.NoLease))(t)
	_, err := s.CAS(ctx, "k", []byte("x"), 0, board.NoLease)
	wantErr(t, "create-only CAS on an existing key", err, board.ErrRevisionMismatch)
	r2 := must(s.CAS(ctx, "k", []byte("2"), r1, board.NoLease))(t)
	_, err = s.CAS(ctx, "k", []byte("x"), r1, board.NoLease)
	wantErr(t, "CAS with a stale revision", err, board.ErrRevisionMismatch)
	if kv := must(s.Get(ctx, "k"))(t); string(kv.Value) != "2" || kv.ModRevision != r2 || kv.CreateRevision != r1 {
		t.Fatalf("after CAS: %+v, want value 2, create %d, mod %d", kv, r1, r2)
	}
	_, err = s.CompareAndDelete(ctx, "k", r1)
	wantErr(t, "CompareAndDelete with a stale revision", err, board.ErrRevisionMismatch)
	must(s.CompareAndDelete(ctx, "k", r2))(t)
	_, err = s.CompareAndDelete(ctx, "k", r2)
	wantErr(t, "CompareAndDelete of a missing key", err, board.ErrNotFound)
	_, err = s.CAS(ctx, "k", []byte("x"), r2, board.NoLease)
	wantErr(t, "CAS on a deleted key", err, board.ErrRevisionMismatch)

	// Racing creators: exactly one wins.
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		c := e.connect()
		go func() {
			_, err := c.CAS(ctx, "race", []byte(fmt.Sprint(i)), 0, board.NoLease)
			errs <- err
		}()
	}
	wins := 0
	for range n {
		err := <-errs
		switch {
		case err == nil:
			wins++
		case !errorIs(err, board.ErrRevisionMismatch):
			t.Fatalf("racing create: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d racing creates succeeded, want 1", wins)
	}
}

func testTxn(t *testing.T, e *env) {
	s := e.connect()
	ctx := e.ctx(t)
	ra := must(s.Put(ctx, "t/a", []byte("a"), board.NoLease))(t)
	// A failing comparison writes nothing and reports the current state.
	res := must(s.Txn(ctx, board.Txn{
		If:   []board.Cmp{board.ModifiedAt("t/a", ra), board.Absent("t/a")},
		Then: []board.Op{board.PutOp("t/b", []byte("b"), board.NoLease), board.DeleteOp("t/a")},
	}))(t)
	if res.Succeeded {
		t.Fatal("Txn with a false comparison succeeded")
	}
	if len(res.Current) != 2 || res.Current[0].ModRevision != ra || res.Current[1].CreateRevision != ra {
		t.Fatalf("failed Txn Current = %+v, want t/a at %d twice", res.Current, ra)
	}
	if _, err := s.Get(ctx, "t/b"); !errorIs(err, board.ErrNotFound) {
		t.Fatalf("failed Txn wrote t/b (Get: %v)", err)
	}
	// A passing one applies every op at one revision.
	res = must(s.Txn(ctx, board.Txn{
		If:   []board.Cmp{board.CreatedAt("t/a", ra), board.Absent("t/b")},
		Then: []board.Op{board.PutOp("t/b", []byte("b"), board.NoLease), board.PutOp("t/c", []byte("c"), board.NoLease), board.DeleteOp("t/a")},
	}))(t)
	if !res.Succeeded || res.Revision <= ra {
		t.Fatalf("Txn = %+v, want success above revision %d", res, ra)
	}
	kvs, _ := must2(s.List(ctx, "t/"))(t)
	if got := keysOf(kvs); !slices.Equal(got, []string{"t/b", "t/c"}) {
		t.Fatalf("after Txn keys = %v, want [t/b t/c]", got)
	}
	for _, kv := range kvs {
		if kv.ModRevision != res.Revision {
			t.Fatalf("%s at revision %d, want the Txn's %d", kv.Key, kv.ModRevision, res.Revision)
		}
	}
	// A Txn that changes nothing takes no revision. The revision is the
	// whole backend's, which other cases running beside this one move, so
	// a few tries are allowed: one that always took a revision fails every
	// try.
	var moved []string
	for range 5 {
		before := must(s.Revision(ctx))(t)
		res = must(s.Txn(ctx, board.Txn{Then: []board.Op{board.DeleteOp("t/none")}}))(t)
		after := must(s.Revision(ctx))(t)
		if !res.Succeeded {
			t.Fatalf("no-op Txn failed: %+v", res)
		}
		if after == before {
			moved = nil
			break
		}
		moved = append(moved, fmt.Sprintf("%d -> %d", before, after))
	}
	if moved != nil {
		t.Fatalf("no-op Txn moved the revision every time: %v", moved)
	}
}

func testInvalid(t *testing.T, e *env) {
	s := e.connect()
	ctx := e.ctx(t)
	for name, err := range map[string]error{
		"empty key": func() error { _, err := s.Put(ctx, "", nil, board.NoLease); return err }(),
		"duplicate op key": func() error {
			_, err := s.Txn(ctx, board.Txn{Then: []board.Op{board.DeleteOp("x"), board.DeleteOp("x")}})
			return err
		}(),
		"zero ttl":        func() error { _, err := s.Grant(ctx, 0); return err }(),
		"empty task":      func() error { _, err := s.Claim(ctx, "", "w", 0, e.ttl); return err }(),
		"empty role":      func() error { _, err := s.Campaign(ctx, "", "w", e.ttl); return err }(),
		"compact to zero": s.Compact(ctx, 0),
	} {
		wantErr(t, name, err, board.ErrInvalid)
	}
}

func testLeaseRevoke(t *testing.T, e *env) {
	s := e.connect()
	ctx := e.ctx(t)
	lease := must(s.Grant(ctx, time.Hour))(t)
	must(s.Put(ctx, "l/1", []byte("1"), lease))(t)
	must(s.Put(ctx, "l/2", []byte("2"), lease))(t)
	must(s.Put(ctx, "l/keep", []byte("k"), board.NoLease))(t)
	if kv := must(s.Get(ctx, "l/1"))(t); kv.Lease != lease {
		t.Fatalf("l/1 bound to lease %x, want %x", kv.Lease, lease)
	}
	if err := s.Renew(ctx, lease); err != nil {
		t.Fatalf("Renew of a live lease: %v", err)
	}
	before := must(s.Revision(ctx))(t)
	if err := s.Revoke(ctx, lease); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	kvs, rev := must2(s.List(ctx, "l/"))(t)
	if got := keysOf(kvs); !slices.Equal(got, []string{"l/keep"}) {
		t.Fatalf("after Revoke keys = %v, want [l/keep]", got)
	}
	if rev <= before {
		t.Fatalf("Revoke did not advance the revision (%d -> %d)", before, rev)
	}
	wantErr(t, "Renew after Revoke", s.Renew(ctx, lease), board.ErrLeaseExpired)
	wantErr(t, "Revoke twice", s.Revoke(ctx, lease), board.ErrLeaseExpired)
	_, err := s.Put(ctx, "l/3", []byte("3"), lease)
	wantErr(t, "Put with a revoked lease", err, board.ErrLeaseExpired)
	if _, err := s.Get(ctx, "l/3"); !errorIs(err, board.ErrNotFound) {
		t.Fatalf("Put with a revoked lease wrote the key (Get: %v)", err)
	}
}

func testLeaseExpiry(t *testing.T, e *env) {
	s := e.connect()
	ctx := e.ctx(t)
	lease := must(s.Grant(ctx, e.ttl))(t)
	rev := must(s.Put(ctx, "x/leased", []byte("v"), lease))(t)
	must(s.Put(ctx, "x/durable", []byte("v"), board.NoLease))(t)
	ev, seen := awaitEvent(t, ctx, s.Watch(ctx, "x/", rev+1), isDelete("x/leased"))
	if ev.Revision <= rev {
		t.Fatalf("expiry at revision %d, not after the put at %d", ev.Revision, rev)
	}
	if len(seen) != 2 || seen[0].Key != "x/durable" {
		t.Fatalf("events before expiry = %+v, want the durable put then the delete", seen)
	}
	_, err := s.Get(ctx, "x/leased")
	wantErr(t, "Get of an expired key", err, board.ErrNotFound)
	if _, err := s.Get(ctx, "x/durable"); err != nil {
		t.Fatalf("durable key lost with the lease: %v", err)
	}
	wantErr(t, "Renew of an expired lease", s.Renew(ctx, lease), board.ErrLeaseExpired)
}

func testSessionKeepsAlive(t *testing.T, e *env) {
	s := e.connect()
	ctx := e.ctx(t)
	ss := must(s.NewSession(ctx, e.ttl))(t)
	rev := must(s.Put(ctx, "s/alive", []byte("v"), ss.Lease()))(t)
	// Let several TTLs pass: the keep-alive must hold the key.
	time.Sleep(3 * e.ttl)
	select {
	case <-ss.Done():
		t.Fatalf("session ended while kept alive: %v", ss.Err())
	default:
	}
	if kv, err := s.Get(ctx, "s/alive"); err != nil || kv.ModRevision != rev {
		t.Fatalf("kept-alive key after 3 TTLs: %+v, %v", kv, err)
	}
	if err := ss.Close(ctx); err != nil {
		t.Fatalf("Session.Close: %v", err)
	}
	<-ss.Done()
	wantErr(t, "Session.Err after Close", ss.Err(), board.ErrClosed)
	_, err := s.Get(ctx, "s/alive")
	wantErr(t, "Get after Session.Close", err, board.ErrNotFound)
}

func errorIs(err, target error) bool { return errors.Is(err, target) }
