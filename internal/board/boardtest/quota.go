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

// quotaSender is one member sending greedily under its slice with a
// sliding-window log, as a gateway does, recording every send.
type quotaSender struct {
	m      *board.QuotaMember
	clock  func() time.Time
	window time.Duration

	mu     sync.Mutex
	want   int64 // requests per window it would send
	log    []time.Time
	maxUse int64 // largest slice it ever used
}

func (q *quotaSender) setWant(n int64) {
	q.mu.Lock()
	q.want = n
	q.mu.Unlock()
}

// step sends what the slice and the demand allow at now.
func (q *quotaSender) step(now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	from := now.Add(-q.window)
	i := 0
	for i < len(q.log) && !q.log[i].After(from) {
		i++
	}
	recent := q.log[i:]
	q.m.SetDemand(board.QuotaVec{Requests: q.want})
	sl, live := q.m.Slice()
	if !live {
		return
	}
	q.maxUse = max(q.maxUse, sl.Requests)
	// Spread the demand over the window: at most want/20 per step.
	burst := max(q.want/20, 1)
	for n := int64(0); n < burst && int64(len(recent)) < min(sl.Requests, q.want); n++ {
		q.log = append(q.log, now)
		recent = q.log[i:]
	}
}

func (q *quotaSender) sends() []time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.log)
}

// testQuota: three members share 100 requests per window. Load moves from
// a to b, and c crashes: combined sends in every window-long interval never
// exceed the limit, b's slice grows once the load moves to it, and c's
// slice is reclaimed after its lease lapses.
func testQuota(t *testing.T, e *env) {
	ctx := e.ctx(t)
	const limit = 100
	window := 2 * e.ttl
	cfg := func(member string) board.QuotaConfig {
		return board.QuotaConfig{Pool: "up", Member: member, Limit: board.QuotaVec{Requests: limit}, Window: window,
			TTL: e.ttl, Interval: e.ttl / 5, Guard: e.ttl / 5}
	}
	clientC := e.connect()
	stores := []*board.Store{e.connect(), e.connect(), clientC}
	var senders []*quotaSender
	for i, s := range stores {
		m, err := s.JoinQuota(ctx, cfg(fmt.Sprint("g", i)))
		if err != nil {
			t.Fatalf("JoinQuota: %v", err)
		}
		if i < 2 {
			t.Cleanup(func() { m.Close(context.WithoutCancel(ctx)) })
		}
		senders = append(senders, &quotaSender{m: m, clock: time.Now, window: window})
	}
	a, b, c := senders[0], senders[1], senders[2]
	a.setWant(90)
	b.setWant(10)
	c.setWant(30)
	step := window / 40
	run := func(d time.Duration) {
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			now := time.Now()
			for _, s := range senders {
				s.step(now)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("quota case timed out: %v", ctx.Err())
			case <-time.After(step):
			}
		}
	}
	// share runs until m holds a large share (a slice is 0 for as long as
	// its lease is not surely held, which a loaded machine can stretch past
	// a renewal), for at most 3 more windows, and returns the last slice.
	share := func(m *board.QuotaMember) int64 {
		var sl board.QuotaVec
		for range 12 {
			if sl, _ = m.Slice(); sl.Requests >= 40 {
				break
			}
			run(window / 4)
		}
		return sl.Requests
	}
	run(3 * window)
	if n := share(a.m); n < 40 {
		t.Errorf("a's slice %d under heavy load; want a large share", n)
	}
	// The load moves to b.
	a.setWant(5)
	b.setWant(90)
	run(3 * window)
	if n := share(b.m); n < 40 {
		t.Errorf("b's slice %d after the load moved to it; want a large share", n)
	}
	// c crashes (its client closes without leaving): its slice is
	// reclaimed once its lease lapses and a window has passed.
	c.setWant(0)
	before, _ := c.m.Slice()
	if err := clientC.Close(); err != nil {
		t.Fatal(err)
	}
	senders = senders[:2]
	b.setWant(150)
	run(3*window + 2*e.ttl)
	tab, err := stores[0].QuotaTable(ctx, "up")
	if err != nil {
		t.Fatal(err)
	}
	if ent := tab.Members["g2"]; ent != nil && ent.Slice.Requests > 0 {
		t.Errorf("crashed member still holds %+v (had %d)", ent, before.Requests)
	}
	if used := tab.Used(time.Now()); used.Requests > limit {
		t.Errorf("table uses %d of %d", used.Requests, limit)
	}
	// The invariant: in every window-long interval, at most limit sends.
	var all []time.Time
	for _, s := range append(senders, c) {
		all = append(all, s.sends()...)
	}
	slices.SortFunc(all, func(x, y time.Time) int { return x.Compare(y) })
	j := 0
	for i := range all {
		for all[i].Sub(all[j]) >= window {
			j++
		}
		if n := i - j + 1; n > limit {
			t.Fatalf("%d sends within one window ending %v; limit %d", n, all[i], limit)
		}
	}
	if len(all) < limit {
		t.Fatalf("only %d sends in total: the members hardly used the pool", len(all))
	}
}
