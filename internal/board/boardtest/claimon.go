package boardtest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// testClaimOnExclusive: claims on host leases, racing from several clients
// (each with its own session, as separate hosts), are exclusive; the claim
// record says it is shared and names its lease.
func testClaimOnExclusive(t *testing.T, e *env) {
	ctx := e.ctx(t)
	stores := make([]*board.Store, 4)
	sessions := make([]*board.Session, len(stores))
	for i := range stores {
		stores[i] = e.connect()
		sessions[i] = must(stores[i].NewSession(ctx, time.Hour))(t)
	}
	for task := range 3 {
		name := fmt.Sprint("host-task-", task)
		var mu sync.Mutex
		var wins []board.Claim
		var wg sync.WaitGroup
		for i := range 16 {
			s, ss := stores[i%len(stores)], sessions[i%len(stores)]
			wg.Go(func() {
				c, err := s.ClaimShared(ctx, name, fmt.Sprint("agent-", i), float64(i), ss.Lease())
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins = append(wins, c)
				case !errorIs(err, board.ErrClaimed):
					t.Errorf("racing ClaimShared: %v", err)
				}
			})
		}
		wg.Wait()
		if len(wins) != 1 {
			t.Fatalf("%s: %d racing claims won, want exactly 1", name, len(wins))
		}
		win := wins[0]
		holder := must(stores[0].Holder(ctx, name))(t)
		if holder != win || !holder.Shared {
			t.Fatalf("Holder = %+v, want the winner %+v, shared", holder, win)
		}
		if kv := must(stores[0].Get(ctx, board.ClaimKey(name)))(t); kv.Lease != win.Lease {
			t.Fatalf("claim key bound to lease %d, want the host's %d", kv.Lease, win.Lease)
		}
		if err := stores[1].CheckFence(ctx, name, win.Token); err != nil {
			t.Fatalf("CheckFence of the live claim: %v", err)
		}
	}
}

// testClaimOnBatch: several claims and other writes in one transaction, all
// or nothing; releasing one claim leaves the lease and the others; the
// lease's end takes every claim still on it.
func testClaimOnBatch(t *testing.T, e *env) {
	ctx := e.ctx(t)
	a, b := e.connect(), e.connect()
	host := must(a.NewSession(ctx, time.Hour))(t)
	other := must(b.NewSession(ctx, time.Hour))(t)
	must(a.Put(ctx, "gate", []byte("open"), board.NoLease))(t)
	gate := must(a.Get(ctx, "gate"))(t)

	// A gatekeeper (b) claims for the host (a) in one transaction: two of
	// its workers' tasks on its lease, one on another host's.
	specs := []board.ClaimSpec{{Task: "b1", Agent: "w1", Score: 1, Lease: host.Lease()}, {Task: "b2", Agent: "w2", Score: 2, Lease: host.Lease()},
		{Task: "b3", Agent: "w3", Score: 3, Lease: host.Lease()}, {Task: "o1", Agent: "v1", Lease: other.Lease()}}
	res := must(b.ClaimOn(ctx, specs, board.Txn{
		If:   []board.Cmp{board.ModifiedAt("gate", gate.ModRevision)},
		Then: []board.Op{board.PutOp("decided", []byte("b1 b2 b3"), board.NoLease)},
	}))(t)
	if !res.Succeeded || len(res.Claims) != 4 {
		t.Fatalf("ClaimOn of four free tasks: %+v", res)
	}
	for i, c := range res.Claims {
		if c.Task != specs[i].Task || c.Agent != specs[i].Agent || c.Token != res.Revision || c.Lease != specs[i].Lease || !c.Shared {
			t.Fatalf("claim %d = %+v, want %+v at revision %d", i, c, specs[i], res.Revision)
		}
		if h := must(a.Holder(ctx, c.Task))(t); h != c {
			t.Fatalf("Holder(%s) = %+v, want %+v", c.Task, h, c)
		}
	}
	if kv := must(a.Get(ctx, "decided"))(t); kv.ModRevision != res.Revision {
		t.Fatalf("the batch's own write is at revision %d, want the claims' %d", kv.ModRevision, res.Revision)
	}
	res0 := res
	b1, b2, b3 := res.Claims[0], res.Claims[1], res.Claims[2]

	// One task in the way: nothing is written, and the holder is named.
	res = must(a.ClaimOn(ctx, []board.ClaimSpec{{Task: "b4", Agent: "x", Lease: other.Lease()}, {Task: "b2", Agent: "x", Lease: other.Lease()}},
		board.Txn{Then: []board.Op{board.PutOp("decided", []byte("b4"), board.NoLease)}}))(t)
	if res.Succeeded || len(res.Taken) != 1 || res.Taken[0] != b2 || len(res.Current) != 2 {
		t.Fatalf("ClaimOn over a held task: %+v, want it refused naming %+v", res, b2)
	}
	_, err := a.Holder(ctx, "b4")
	wantErr(t, "Holder of the task a refused batch asked for", err, board.ErrNotFound)
	if kv := must(a.Get(ctx, "decided"))(t); string(kv.Value) != "b1 b2 b3" {
		t.Fatalf("a refused batch wrote %q", kv.Value)
	}
	// The caller's own comparison fails: refused, no holder named.
	res = must(a.ClaimOn(ctx, []board.ClaimSpec{{Task: "b4", Agent: "x", Lease: other.Lease()}},
		board.Txn{If: []board.Cmp{board.ModifiedAt("gate", gate.ModRevision+1000)}}))(t)
	if res.Succeeded || len(res.Taken) != 0 || len(res.Current) != 2 {
		t.Fatalf("ClaimOn whose comparison fails: %+v", res)
	}
	_, err = a.ClaimShared(ctx, "b1", "late", 0, other.Lease())
	wantErr(t, "ClaimShared of a held task", err, board.ErrClaimed)

	// Releasing b1 deletes its claim only: the host's lease and its other
	// claims stay.
	if err := a.Release(ctx, b1); err != nil {
		t.Fatalf("Release of a shared claim: %v", err)
	}
	_, err = a.Holder(ctx, "b1")
	wantErr(t, "Holder after Release", err, board.ErrNotFound)
	if err := a.Renew(ctx, host.Lease()); err != nil {
		t.Fatalf("the host's lease after releasing one of its claims: %v", err)
	}
	if h := must(a.Holder(ctx, "b2"))(t); h != b2 {
		t.Fatalf("b2 after releasing b1: %+v", h)
	}
	wantErr(t, "second Release", a.Release(ctx, b1), board.ErrLeaseExpired)
	if err := a.CheckFence(ctx, "b1", b1.Token); err != nil {
		t.Fatalf("CheckFence after Release with no newer claim: %v", err)
	}
	nb1 := must(b.ClaimShared(ctx, "b1", "again", 0, other.Lease()))(t)
	if nb1.Token <= b1.Token {
		t.Fatalf("re-claim token %d not above %d", nb1.Token, b1.Token)
	}
	wantErr(t, "Release of a superseded shared claim", a.Release(ctx, b1), board.ErrStaleFence)
	if h := must(a.Holder(ctx, "b1"))(t); h != nb1 {
		t.Fatalf("a stale Release touched the new claim: %+v", h)
	}

	// b2's outcome and its release in one transaction; a replay fails.
	done := board.Txn{If: []board.Cmp{b2.Guard()}, Then: []board.Op{board.PutOp("out/b2", []byte("done"), board.NoLease), b2.ReleaseOp()}}
	if r := must(a.Txn(ctx, done))(t); !r.Succeeded {
		t.Fatal("the done transaction of a live claim failed")
	}
	_, err = a.Holder(ctx, "b2")
	wantErr(t, "Holder after the done transaction", err, board.ErrNotFound)
	if r := must(a.Txn(ctx, done))(t); r.Succeeded {
		t.Fatal("the done transaction ran twice")
	}

	// The host's lease ends: every claim still on it goes at one revision;
	// the other host's stays.
	rev := must(a.Revision(ctx))(t)
	if err := host.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = a.Holder(ctx, "b3")
	wantErr(t, "Holder after the host's lease ended", err, board.ErrNotFound)
	if h := must(a.Holder(ctx, "o1"))(t); h != res0.Claims[3] {
		t.Fatalf("the other host's claim after this host's lease ended: %+v", h)
	}
	if err := b.CheckFence(ctx, "b3", b3.Token); err != nil {
		t.Fatalf("CheckFence after the lease ended, none newer: %v", err)
	}
	_, err = a.PutFenced(ctx, "b3", b3.Token, "out/b3", []byte("late"))
	wantErr(t, "PutFenced after the host's lease ended", err, board.ErrLeaseExpired)
	evs := collect(t, ctx, a.Watch(ctx, board.PrefixClaims, rev+1), 1)
	if evs[0].Type != board.EventDelete || evs[0].Key != board.ClaimKey("b3") {
		t.Fatalf("after the lease ended: %+v, want b3's claim deleted", evs)
	}

	// A lease that is gone: nothing is written.
	_, err = a.ClaimOn(ctx, []board.ClaimSpec{{Task: "b5", Agent: "x", Lease: other.Lease()}, {Task: "b6", Agent: "x", Lease: host.Lease()}}, board.Txn{Then: []board.Op{board.PutOp("decided", []byte("b5"), board.NoLease)}})
	wantErr(t, "ClaimOn on an ended lease", err, board.ErrLeaseExpired)
	_, err = a.Holder(ctx, "b5")
	wantErr(t, "Holder after a ClaimOn on an ended lease", err, board.ErrNotFound)
	wantErr(t, "fence after a ClaimOn on an ended lease", a.CheckFence(ctx, "b5", 1), board.ErrStaleFence)
	if kv := must(a.Get(ctx, "decided"))(t); string(kv.Value) != "b1 b2 b3" {
		t.Fatalf("a ClaimOn on an ended lease wrote %q", kv.Value)
	}
}

// testClaimOnExpiry: a host that stops renewing loses every claim on its
// lease; a late writer is fenced out.
func testClaimOnExpiry(t *testing.T, e *env) {
	ctx := e.ctx(t)
	a, b := e.connect(), e.connect()
	lease := must(a.Grant(ctx, e.ttl))(t)
	res := must(a.ClaimOn(ctx, []board.ClaimSpec{{Task: "e1", Agent: "a", Lease: lease}, {Task: "e2", Agent: "a", Lease: lease}}, board.Txn{}))(t)
	if !res.Succeeded {
		t.Fatalf("ClaimOn: %+v", res)
	}
	awaitEvent(t, ctx, b.Watch(ctx, board.PrefixClaims, res.Revision+1), isDelete(board.ClaimKey("e2")))
	for _, task := range []string{"e1", "e2"} {
		_, err := b.Holder(ctx, task)
		wantErr(t, "Holder after the host's lease lapsed", err, board.ErrNotFound)
	}
	c := must(b.ClaimShared(ctx, "e1", "b", 1, must(b.Grant(ctx, time.Hour))(t)))(t)
	if c.Token <= res.Revision {
		t.Fatalf("re-claim token %d not above the lapsed %d", c.Token, res.Revision)
	}
	_, err := a.PutFenced(ctx, "e1", res.Claims[0].Token, "out/e1", []byte("late"))
	wantErr(t, "PutFenced by the late host", err, board.ErrStaleFence)
}

// testClaimOnInvalid: bad arguments write nothing.
func testClaimOnInvalid(t *testing.T, e *env) {
	ctx := e.ctx(t)
	s := e.connect()
	lease := must(s.Grant(ctx, time.Hour))(t)
	var many []board.ClaimSpec
	for i := range board.MaxTxnOps/2 + 1 {
		many = append(many, board.ClaimSpec{Task: fmt.Sprint("m", i), Agent: "a", Lease: lease})
	}
	for name, call := range map[string]func() error{
		"no lease": func() error { _, err := s.ClaimShared(ctx, "x", "a", 0, board.NoLease); return err },
		"no tasks": func() error { _, err := s.ClaimOn(ctx, nil, board.Txn{}); return err },
		"empty task": func() error {
			_, err := s.ClaimOn(ctx, []board.ClaimSpec{{Agent: "a", Lease: lease}}, board.Txn{})
			return err
		},
		"empty agent": func() error { _, err := s.ClaimShared(ctx, "x", "", 0, lease); return err },
		"repeated task": func() error {
			_, err := s.ClaimOn(ctx, []board.ClaimSpec{{Task: "x", Agent: "a", Lease: lease}, {Task: "x", Agent: "b", Lease: lease}}, board.Txn{})
			return err
		},
		"too many": func() error { _, err := s.ClaimOn(ctx, many, board.Txn{}); return err },
	} {
		wantErr(t, name, call(), board.ErrInvalid)
	}
	if kvs, _ := must2(s.List(ctx, ""))(t); len(kvs) != 0 {
		t.Fatalf("invalid claims wrote %v", keysOf(kvs))
	}
}

// testTxnLimit: MaxTxnOps comparisons and writes fit in one Txn, one more
// does not, on every backend.
func testTxnLimit(t *testing.T, e *env) {
	ctx := e.ctx(t)
	s := e.connect()
	var full board.Txn
	for i := range board.MaxTxnOps {
		k := fmt.Sprintf("lim/%03d", i)
		full.If = append(full.If, board.Absent(k))
		full.Then = append(full.Then, board.PutOp(k, []byte("v"), board.NoLease))
	}
	res := must(s.Txn(ctx, full))(t)
	if !res.Succeeded {
		t.Fatal("a Txn of MaxTxnOps comparisons and writes failed")
	}
	if kvs, _ := must2(s.List(ctx, "lim/"))(t); len(kvs) != board.MaxTxnOps || kvs[0].ModRevision != res.Revision || kvs[len(kvs)-1].ModRevision != res.Revision {
		t.Fatalf("after the full Txn: %d keys", len(kvs))
	}
	over := board.Txn{Then: append(full.Then[:board.MaxTxnOps:board.MaxTxnOps], board.PutOp("lim/over", nil, board.NoLease))}
	_, err := s.Txn(ctx, over)
	wantErr(t, "Txn of MaxTxnOps+1 writes", err, board.ErrInvalid)
	overIf := board.Txn{If: append(full.If[:board.MaxTxnOps:board.MaxTxnOps], board.Absent("lim/over")), Then: []board.Op{board.PutOp("lim/over", nil, board.NoLease)}}
	_, err = s.Txn(ctx, overIf)
	wantErr(t, "Txn of MaxTxnOps+1 comparisons", err, board.ErrInvalid)
	_, err = s.Get(ctx, "lim/over")
	wantErr(t, "Get of a key only refused Txns wrote", err, board.ErrNotFound)
}
