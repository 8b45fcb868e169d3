package boardtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

func testElectionOneLeader(t *testing.T, e *env) {
	ctx := e.ctx(t)
	s := e.connect()
	_, err := s.Leader(ctx, "gate")
	wantErr(t, "Leader before any campaign", err, board.ErrNotFound)

	// Candidates on separate clients; each leads in turn, never two at once.
	const n = 5
	var leading, turns atomic.Int32
	tokens := make(chan int64, n)
	var wg sync.WaitGroup
	for i := range n {
		c := e.connect()
		id := fmt.Sprint("cand-", i)
		wg.Go(func() {
			l, err := c.Campaign(ctx, "gate", id, time.Hour)
			if err != nil {
				t.Errorf("Campaign %s: %v", id, err)
				return
			}
			if now := leading.Add(1); now != 1 {
				t.Errorf("%d leaders at once", now)
			}
			if cur, err := c.Leader(ctx, "gate"); err != nil || cur.ID != id || cur.Token != l.Token {
				t.Errorf("Leader while %s leads = %+v, %v", id, cur, err)
			}
			tokens <- l.Token
			turns.Add(1)
			leading.Add(-1)
			if err := l.Resign(ctx); err != nil {
				t.Errorf("Resign %s: %v", id, err)
			}
			select {
			case <-l.Done():
			case <-ctx.Done():
				t.Errorf("Done not closed after Resign")
			}
		})
	}
	wg.Wait()
	close(tokens)
	if turns.Load() != n {
		t.Fatalf("%d of %d candidates led", turns.Load(), n)
	}
	seen := map[int64]bool{}
	for tok := range tokens {
		if seen[tok] {
			t.Fatalf("leadership token %d issued twice", tok)
		}
		seen[tok] = true
	}
	_, err = s.Leader(ctx, "gate")
	wantErr(t, "Leader after everyone resigned", err, board.ErrNotFound)
}

func testElectionFailover(t *testing.T, e *env) {
	ctx := e.ctx(t)
	a, b, observer := e.connect(), e.connect(), e.connect()
	la := must(a.Campaign(ctx, "merge", "a", e.ttl))(t)
	if cur := must(observer.Leader(ctx, "merge"))(t); cur.ID != "a" || cur.Token != la.Token {
		t.Fatalf("Leader = %+v, want a", cur)
	}
	// A guarded write succeeds while a leads.
	res := must(a.Txn(ctx, board.Txn{If: []board.Cmp{la.Guard()}, Then: []board.Op{board.PutOp("merged", []byte("a"), board.NoLease)}}))(t)
	if !res.Succeeded {
		t.Fatal("leader's guarded write failed")
	}
	// b campaigns and waits behind a: wait until its candidacy is on the board.
	watch := observer.Watch(ctx, board.PrefixElections, la.Token+1)
	type won struct {
		l   *board.Leadership
		err error
	}
	result := make(chan won, 1)
	go func() {
		l, err := b.Campaign(ctx, "merge", "b", e.ttl)
		result <- won{l, err}
	}()
	awaitEvent(t, ctx, watch, func(ev board.Event) bool { return ev.Type == board.EventPut && string(ev.Value) == "b" })
	select {
	case w := <-result:
		t.Fatalf("b won while a leads: %+v", w)
	default:
	}
	// a's process dies: its keep-alive stops; nobody resigns.
	if err := a.Close(); err != nil {
		t.Fatalf("Close a: %v", err)
	}
	select {
	case <-la.Done():
	case <-ctx.Done():
		t.Fatal("a's leadership Done not closed when its store closed")
	}
	var lb *board.Leadership
	select {
	case w := <-result:
		if w.err != nil {
			t.Fatalf("b's campaign: %v", w.err)
		}
		lb = w.l
	case <-ctx.Done():
		t.Fatal("b never took over after a's lease lapsed")
	}
	if lb.Token <= la.Token {
		t.Fatalf("new leader's token %d not above the old %d", lb.Token, la.Token)
	}
	if cur := must(observer.Leader(ctx, "merge"))(t); cur.ID != "b" || cur.Token != lb.Token {
		t.Fatalf("Leader after failover = %+v, want b", cur)
	}
	// The old leader's guard no longer holds.
	res = must(b.Txn(ctx, board.Txn{If: []board.Cmp{la.Guard()}, Then: []board.Op{board.PutOp("merged", []byte("late a"), board.NoLease)}}))(t)
	if res.Succeeded {
		t.Fatal("the deposed leader's guarded write succeeded")
	}
	if err := lb.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
}

func testElectionCancel(t *testing.T, e *env) {
	ctx := e.ctx(t)
	a, b := e.connect(), e.connect()
	la := must(a.Campaign(ctx, "role", "a", time.Hour))(t)
	cctx, cancel := context.WithCancel(ctx)
	watch := a.Watch(ctx, board.PrefixElections, la.Token+1)
	result := make(chan error, 1)
	go func() {
		_, err := b.Campaign(cctx, "role", "b", time.Hour)
		result <- err
	}()
	awaitEvent(t, ctx, watch, func(ev board.Event) bool { return ev.Type == board.EventPut && string(ev.Value) == "b" })
	cancel()
	if err := <-result; !errorIs(err, context.Canceled) {
		t.Fatalf("cancelled Campaign returned %v, want context.Canceled", err)
	}
	// The withdrawn candidacy is gone: when a resigns, nobody leads.
	if err := la.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	kvs, _ := must2(a.List(ctx, board.PrefixElections))(t)
	if len(kvs) != 0 {
		t.Fatalf("candidates left after cancel and resign: %v", keysOf(kvs))
	}
}
