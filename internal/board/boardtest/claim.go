package boardtest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

func testClaimExclusive(t *testing.T, e *env) {
	ctx := e.ctx(t)
	const clients, perClient, tasks = 4, 4, 3
	stores := make([]*board.Store, clients)
	for i := range stores {
		stores[i] = e.connect()
	}
	tokens := map[int64]string{}
	for task := range tasks {
		name := fmt.Sprint("task-", task)
		var mu sync.Mutex
		var wins []board.Claim
		var wg sync.WaitGroup
		for i := range clients * perClient {
			s := stores[i%clients]
			wg.Go(func() {
				c, err := s.Claim(ctx, name, fmt.Sprint("agent-", i), float64(i), time.Hour)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins = append(wins, c)
				case !errorIs(err, board.ErrClaimed):
					t.Errorf("racing Claim: %v", err)
				}
			})
		}
		wg.Wait()
		if len(wins) != 1 {
			t.Fatalf("%s: %d racing claims won, want exactly 1", name, len(wins))
		}
		win := wins[0]
		holder := must(stores[0].Holder(ctx, name))(t)
		if holder.Agent != win.Agent || holder.Token != win.Token || holder.Lease != win.Lease || holder.Score != win.Score {
			t.Fatalf("Holder = %+v, want the winner %+v", holder, win)
		}
		if prev, dup := tokens[win.Token]; dup {
			t.Fatalf("token %d issued to %s and %s", win.Token, prev, name)
		}
		tokens[win.Token] = name
		_, err := stores[1].Claim(ctx, name, "late", 0, time.Hour)
		wantErr(t, "Claim of a held task", err, board.ErrClaimed)
	}
}

func testFencingMonotonic(t *testing.T, e *env) {
	a, b := e.connect(), e.connect()
	ctx := e.ctx(t)
	var last int64
	next := func(c board.Claim) board.Claim {
		t.Helper()
		if c.Token <= last {
			t.Fatalf("token %d for %s not above the previous %d", c.Token, c.Task, last)
		}
		last = c.Token
		return c
	}
	c1 := next(must(a.Claim(ctx, "t1", "a", 1, time.Hour))(t))
	next(must(b.Claim(ctx, "t2", "b", 1, time.Hour))(t))
	if err := a.CheckFence(ctx, "t1", c1.Token); err != nil {
		t.Fatalf("CheckFence of the live claim: %v", err)
	}
	must(a.PutFenced(ctx, "t1", c1.Token, "out/t1", []byte("first")))(t)

	// Release, then a new claim: the old token is stale everywhere.
	if err := a.Release(ctx, c1); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := a.CheckFence(ctx, "t1", c1.Token); err != nil {
		t.Fatalf("CheckFence after Release with no newer claim: %v, want nil", err)
	}
	_, err := a.PutFenced(ctx, "t1", c1.Token, "out/t1", []byte("late"))
	wantErr(t, "PutFenced after Release", err, board.ErrLeaseExpired)
	wantErr(t, "Renew of a released claim's lease", a.Renew(ctx, c1.Lease), board.ErrLeaseExpired)

	c3 := next(must(b.Claim(ctx, "t1", "b", 2, time.Hour))(t))
	wantErr(t, "CheckFence of a superseded token", a.CheckFence(ctx, "t1", c1.Token), board.ErrStaleFence)
	_, err = a.PutFenced(ctx, "t1", c1.Token, "out/t1", []byte("late"))
	wantErr(t, "PutFenced with a superseded token", err, board.ErrStaleFence)
	wantErr(t, "Release of a superseded claim", a.Release(ctx, c1), board.ErrStaleFence)
	wantErr(t, "CheckFence of a never-issued token", a.CheckFence(ctx, "t1", c3.Token+1000), board.ErrStaleFence)
	wantErr(t, "CheckFence of an unclaimed task", a.CheckFence(ctx, "t9", 1), board.ErrStaleFence)
	if kv := must(a.Get(ctx, "out/t1"))(t); string(kv.Value) != "first" {
		t.Fatalf("fenced key = %q, want the first holder's write only", kv.Value)
	}
	must(b.PutFenced(ctx, "t1", c3.Token, "out/t1", []byte("second")))(t)
	// A fenced guard in a caller's own Txn.
	res := must(b.Txn(ctx, board.Txn{If: []board.Cmp{c3.Guard(), board.FenceIs("t1", c3.Token)}, Then: []board.Op{board.DeleteOp("out/t1")}}))(t)
	if !res.Succeeded {
		t.Fatal("Txn guarded by the live claim failed")
	}
	res = must(a.Txn(ctx, board.Txn{If: []board.Cmp{board.HeldBy("t1", c1.Token)}, Then: []board.Op{board.PutOp("out/t1", nil, board.NoLease)}}))(t)
	if res.Succeeded {
		t.Fatal("Txn guarded by a superseded claim succeeded")
	}

	// Many concurrent claims on distinct tasks: all tokens distinct, and each
	// later (sequential) claim above all of them.
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for i := range 12 {
		s := []*board.Store{a, b}[i%2]
		wg.Go(func() {
			c, err := s.Claim(ctx, fmt.Sprint("many-", i), "x", 0, time.Hour)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("Claim many-%d: %v", i, err)
				return
			}
			if seen[c.Token] {
				t.Errorf("token %d issued twice", c.Token)
			}
			seen[c.Token] = true
			last = max(last, c.Token)
		})
	}
	wg.Wait()
	next(must(a.Claim(ctx, "after", "a", 0, time.Hour))(t))
}

func testClaimExpiry(t *testing.T, e *env) {
	a, b := e.connect(), e.connect()
	ctx := e.ctx(t)
	task := must(a.CreateTask(ctx, board.Task{ID: "exp", Status: board.TaskReady}))(t)
	c1 := must(a.Claim(ctx, "exp", "a", 1, e.ttl))(t)
	// The holder renews for a while: the claim survives past its TTL.
	for range 3 {
		time.Sleep(e.ttl / 3)
		if err := a.Renew(ctx, c1.Lease); err != nil {
			t.Fatalf("Renew of a live claim: %v", err)
		}
	}
	if h, err := b.Holder(ctx, "exp"); err != nil || h.Token != c1.Token {
		t.Fatalf("renewed claim: Holder = %+v, %v", h, err)
	}
	_, err := b.Claim(ctx, "exp", "b", 2, e.ttl)
	wantErr(t, "Claim of a renewed task", err, board.ErrClaimed)
	task.Status, task.Worker, task.Token = board.TaskRunning, "a", c1.Token
	task = must(a.UpdateTask(ctx, task, c1.Guard()))(t)

	// Then it stops renewing (paused, partitioned): the claim lapses.
	awaitEvent(t, ctx, b.Watch(ctx, board.PrefixClaims, task.Revision+1), isDelete("claims/exp"))
	_, err = b.Holder(ctx, "exp")
	wantErr(t, "Holder after expiry", err, board.ErrNotFound)
	_, err = a.PutFenced(ctx, "exp", c1.Token, "out/exp", []byte("late"))
	wantErr(t, "PutFenced after the lease lapsed", err, board.ErrLeaseExpired)
	wantErr(t, "Renew after the lease lapsed", a.Renew(ctx, c1.Lease), board.ErrLeaseExpired)

	c2 := must(b.Claim(ctx, "exp", "b", 2, time.Hour))(t)
	if c2.Token <= c1.Token {
		t.Fatalf("re-claim token %d not above the lapsed %d", c2.Token, c1.Token)
	}
	// The late writer wakes up: every fenced path rejects it.
	wantErr(t, "CheckFence by the late writer", a.CheckFence(ctx, "exp", c1.Token), board.ErrStaleFence)
	_, err = a.PutFenced(ctx, "exp", c1.Token, "out/exp", []byte("late"))
	wantErr(t, "PutFenced by the late writer", err, board.ErrStaleFence)
	task.Status = board.TaskDone
	_, err = a.UpdateTask(ctx, task, c1.Guard())
	wantErr(t, "UpdateTask by the late writer", err, board.ErrStaleFence)
	if err := b.CheckFence(ctx, "exp", c2.Token); err != nil {
		t.Fatalf("CheckFence of the new claim: %v", err)
	}
	task.Worker, task.Token = "b", c2.Token
	must(b.UpdateTask(ctx, task, c2.Guard()))(t)
}
