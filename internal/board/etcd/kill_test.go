package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/etcd/etcdtest"
	"github.com/apiary-dev/apiary/internal/envtest"
)

// leaderOf returns the cluster member that is the raft leader.
func leaderOf(t *testing.T, ctx context.Context, c *etcdtest.Cluster) *etcdtest.Member {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ids := map[uint64]*etcdtest.Member{}
	var leader uint64
	for i, ep := range c.Endpoints() {
		st, err := cli.Status(ctx, ep)
		if err != nil {
			t.Fatalf("status of %s: %v", ep, err)
		}
		ids[st.Header.MemberId] = c.Members[i]
		leader = st.Leader
	}
	m := ids[leader]
	if m == nil {
		t.Fatalf("leader %x is not a member", leader)
	}
	return m
}

// TestMemberKill kills the raft leader of a 3-member cluster with SIGKILL
// while workers race to claim tasks and a watcher follows the claims: every
// claim stays exclusive, the watch continues without a gap or a repeat, and
// elections still work on the surviving two members.
func TestMemberKill(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, envtest.Command(t, "etcd"), 3)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	open := func() *board.Store {
		s, err := Open(ctx, c.Endpoints(), Options{Prefix: "kill/"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	watcher, a, b := open(), open(), open()
	start, err := watcher.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := watcher.Watch(ctx, board.PrefixClaims, start+1)

	const tasks, workers = 60, 4
	var mu sync.Mutex
	won := map[string]board.Claim{}
	retries := 0
	claimed := make(chan struct{}, tasks)
	var wg sync.WaitGroup
	for w := range workers {
		s := []*board.Store{a, b}[w%2]
		me := fmt.Sprint("worker-", w)
		wg.Go(func() {
			for i := range tasks {
				task := fmt.Sprint("task-", i)
				for {
					cl, err := s.Claim(ctx, task, me, 1, time.Minute)
					if errors.Is(err, board.ErrClaimed) {
						// Ours, if an earlier attempt's reply was lost and
						// its read-back failed too: adopt it.
						h, herr := s.Holder(ctx, task)
						if herr != nil || h.Agent != me {
							break
						}
						cl, err = h, nil
					}
					if err == nil {
						mu.Lock()
						if prev, dup := won[task]; dup {
							t.Errorf("%s won by %s and %s", task, prev.Agent, cl.Agent)
						}
						won[task] = cl
						mu.Unlock()
						claimed <- struct{}{}
						break
					}
					if ctx.Err() != nil {
						break
					}
					// Unavailable during the election: try again shortly.
					mu.Lock()
					retries++
					mu.Unlock()
					select {
					case <-ctx.Done():
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
		})
	}
	for range tasks / 2 {
		<-claimed
	}
	victim := leaderOf(t, ctx, c)
	victim.Kill()
	t.Logf("killed leader %s after %d claims", victim.Name, tasks/2)
	wg.Wait()

	// Every task ends with exactly one live claim, held by its recorded
	// winner (a claim whose reply was lost is resolved by reading it back).
	kvs, _, err := watcher.List(ctx, board.PrefixClaims)
	if err != nil {
		t.Fatal(err)
	}
	if len(kvs) != tasks || len(won) != tasks {
		t.Fatalf("%d live claims, %d winners, want %d each", len(kvs), len(won), tasks)
	}
	for task, cl := range won {
		h, err := watcher.Holder(ctx, task)
		if err != nil || h.Token != cl.Token || h.Agent != cl.Agent {
			t.Fatalf("Holder(%s) = %+v, %v; want the winner %+v", task, h, err, cl)
		}
	}
	// The watch saw every claim exactly once, in revision order, across the
	// kill, and claims on one task never overlapped: a put is always
	// followed by a delete before the next put.
	held := map[string]int64{} // claim key -> token of its live claim
	done := func() bool {
		for task, cl := range won {
			if held["claims/"+task] != cl.Token {
				return false
			}
		}
		return true
	}
	var last int64
	for !done() {
		select {
		case resp, ok := <-events:
			if !ok || resp.Err != nil {
				t.Fatalf("watch ended: %v", resp.Err)
			}
			for _, ev := range resp.Events {
				if ev.Revision <= last {
					t.Fatalf("event at revision %d after %d", ev.Revision, last)
				}
				last = ev.Revision
				switch _, live := held[ev.Key]; {
				case ev.Type == board.EventPut && live:
					t.Fatalf("%s claimed at %d while held at %d", ev.Key, ev.CreateRevision, held[ev.Key])
				case ev.Type == board.EventPut:
					held[ev.Key] = ev.CreateRevision
				case !live:
					t.Fatalf("%s released while not held", ev.Key)
				default:
					delete(held, ev.Key)
				}
			}
		case <-ctx.Done():
			t.Fatalf("watch saw %d of %d claims", len(held), tasks)
		}
	}
	t.Logf("%d claim attempts retried after transient errors", retries)
	// Elections on the surviving majority.
	l, err := a.Campaign(ctx, "merge", "a", time.Minute)
	if err != nil {
		t.Fatalf("Campaign after the kill: %v", err)
	}
	if cur, err := b.Leader(ctx, "merge"); err != nil || cur.ID != "a" {
		t.Fatalf("Leader after the kill = %+v, %v", cur, err)
	}
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
