package sched

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// recorder collects the labels of admitted requests in admission order.
type recorder struct {
	mu    sync.Mutex
	order []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.order = append(r.order, s)
	r.mu.Unlock()
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}

// queue starts a goroutine that waits for admission, records label and
// releases at once, and waits until it is queued. Run inside a bubble.
func queue(t *testing.T, g *Gate, rec *recorder, label string, r Request) {
	t.Helper()
	go func() {
		tk, err := g.Acquire(t.Context(), r)
		if err != nil {
			rec.add("error:" + err.Error())
			return
		}
		rec.add(label)
		tk.Release()
	}()
	synctest.Wait()
}

func mustAcquire(t *testing.T, g *Gate, r Request) *Ticket {
	t.Helper()
	tk, err := g.Acquire(t.Context(), r)
	if err != nil {
		t.Fatalf("Acquire(%+v): %v", r, err)
	}
	return tk
}

func TestGateAdmitsUpToLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(GateConfig{Limit: 2})
		a := mustAcquire(t, g, Request{Agent: "a"})
		mustAcquire(t, g, Request{Agent: "b"})
		rec := &recorder{}
		queue(t, g, rec, "c", Request{Agent: "c"})
		if got := rec.get(); len(got) != 0 {
			t.Fatalf("third request admitted over the limit: %v", got)
		}
		if s := g.Stats(); s.InFlight != 2 || s.Queued != 1 || s.Limit != 2 {
			t.Fatalf("stats = %+v, want 2 in flight, 1 queued", s)
		}
		a.Release()
		a.Release() // a second release must not free a second slot
		synctest.Wait()
		if got := rec.get(); !slices.Equal(got, []string{"c"}) {
			t.Fatalf("after release: %v, want [c]", got)
		}
		if s := g.Stats(); s.InFlight != 1 || s.Queued != 0 {
			t.Fatalf("stats = %+v, want 1 in flight (double release freed a slot?)", s)
		}
	})
}

func TestGateQueueFull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		maxQueue int
		queued   int // waiters that fit
	}{
		{"bounded", 2, 2},
		{"no queue", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				g := NewGate(GateConfig{Limit: 1, MaxQueue: tc.maxQueue})
				hold := mustAcquire(t, g, Request{})
				rec := &recorder{}
				for i := range tc.queued {
					queue(t, g, rec, fmt.Sprint(i), Request{})
				}
				_, err := g.Acquire(t.Context(), Request{})
				if !errors.Is(err, ErrQueueFull) {
					t.Fatalf("Acquire with full queue = %v, want ErrQueueFull", err)
				}
				if s := g.Stats(); s.Queued != tc.queued {
					t.Fatalf("queued = %d, want %d", s.Queued, tc.queued)
				}
				hold.Release()
				synctest.Wait()
				if got := len(rec.get()); got != tc.queued {
					t.Fatalf("%d waiters admitted, want %d", got, tc.queued)
				}
			})
		})
	}
}

func TestGateOrder(t *testing.T) {
	t.Parallel()
	type waiter struct {
		label string
		req   Request
		after time.Duration // virtual time to pass before queueing it
	}
	for _, tc := range []struct {
		name  string
		cfg   GateConfig
		queue []waiter
		want  []string
	}{
		{
			name: "priority classes, higher first, then arrival",
			queue: []waiter{
				{"low", Request{Agent: "a", Class: 0}, 0},
				{"high", Request{Agent: "b", Class: 2}, 0},
				{"mid", Request{Agent: "c", Class: 1}, 0},
				{"high2", Request{Agent: "d", Class: 2}, 0},
			},
			want: []string{"high", "high2", "mid", "low"},
		},
		{
			name: "without aging a long wait does not help",
			queue: []waiter{
				{"old-low", Request{Agent: "a", Class: 0}, 0},
				{"new-high", Request{Agent: "b", Class: 3}, 10 * time.Second},
			},
			want: []string{"new-high", "old-low"},
		},
		{
			name: "aging lifts a class that waited",
			cfg:  GateConfig{AgingStep: time.Second},
			queue: []waiter{
				{"old-low", Request{Agent: "a", Class: 0}, 0},
				{"new-high", Request{Agent: "b", Class: 3}, 4 * time.Second},
			},
			want: []string{"old-low", "new-high"},
		},
		{
			name: "aging not yet enough",
			cfg:  GateConfig{AgingStep: time.Second},
			queue: []waiter{
				{"old-low", Request{Agent: "a", Class: 0}, 0},
				{"new-high", Request{Agent: "b", Class: 3}, 2 * time.Second},
			},
			want: []string{"new-high", "old-low"},
		},
		{
			name: "fair share by cost: a cheap request passes an expensive one",
			queue: []waiter{
				{"a1", Request{Agent: "a", Cost: 1000}, 0},
				{"a2", Request{Agent: "a", Cost: 1000}, 0},
				{"b1", Request{Agent: "b", Cost: 10}, 0},
				{"b2", Request{Agent: "b", Cost: 10}, 0},
			},
			want: []string{"a1", "b1", "b2", "a2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				tc.cfg.Limit = 1
				g := NewGate(tc.cfg)
				hold := mustAcquire(t, g, Request{Agent: "holder"})
				rec := &recorder{}
				for _, w := range tc.queue {
					time.Sleep(w.after)
					queue(t, g, rec, w.label, w.req)
				}
				hold.Release()
				synctest.Wait()
				if got := rec.get(); !slices.Equal(got, tc.want) {
					t.Fatalf("admission order %v, want %v", got, tc.want)
				}
			})
		})
	}
}

// TestGateFairShare: an agent with 50 queued requests cannot starve an agent
// with one; a FIFO queue would admit B 51st.
func TestGateFairShare(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(GateConfig{Limit: 1})
		hold := mustAcquire(t, g, Request{Agent: "a"})
		rec := &recorder{}
		for i := range 50 {
			queue(t, g, rec, fmt.Sprint("a", i), Request{Agent: "a", Cost: 500})
		}
		queue(t, g, rec, "b", Request{Agent: "b", Cost: 500})
		hold.Release()
		synctest.Wait()
		got := rec.get()
		if len(got) != 51 {
			t.Fatalf("%d admitted, want 51", len(got))
		}
		if i := slices.Index(got, "b"); i < 0 || i > 2 {
			t.Fatalf("b admitted at position %d of %v, want within the first 3", i, got)
		}
	})
}

// TestGateAgingNoStarvation: a steady stream of high-class requests cannot
// keep a low-class one waiting forever when aging is on.
func TestGateAgingNoStarvation(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(GateConfig{Limit: 1, AgingStep: time.Second})
		hold := mustAcquire(t, g, Request{Agent: "h"})
		done := make(chan time.Time, 1)
		start := time.Now()
		go func() {
			tk, err := g.Acquire(t.Context(), Request{Agent: "low", Class: 0})
			if err != nil {
				t.Error(err)
				return
			}
			done <- time.Now()
			tk.Release()
		}()
		synctest.Wait()
		// Every 100 ms a new class-5 request arrives and the holder hands
		// its slot on; without aging the low request would never run.
		for i := 0; ; i++ {
			select {
			case at := <-done:
				if waited := at.Sub(start); waited > 7*time.Second {
					t.Fatalf("low-class request waited %v, want about 6 s", waited)
				}
				hold.Release()
				return
			default:
			}
			if i > 1000 {
				t.Fatal("low-class request starved")
			}
			next := make(chan *Ticket, 1)
			go func() {
				tk, err := g.Acquire(t.Context(), Request{Agent: fmt.Sprint("h", i), Class: 5})
				if err == nil {
					next <- tk
				}
			}()
			synctest.Wait()
			time.Sleep(100 * time.Millisecond)
			hold.Release()
			synctest.Wait()
			select {
			case hold = <-next:
			default:
				// The low request took the slot; the high one waits.
				hold = <-next
			}
		}
	})
}

func TestGatePerAgentCap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(GateConfig{Limit: 3, PerAgent: 1})
		a := mustAcquire(t, g, Request{Agent: "a"})
		rec := &recorder{}
		queue(t, g, rec, "a2", Request{Agent: "a", Class: 9})
		if got := rec.get(); len(got) != 0 {
			t.Fatalf("agent over its cap admitted: %v", got)
		}
		// A capped agent's waiter must not block other agents, even with a
		// higher class.
		b := mustAcquire(t, g, Request{Agent: "b"})
		s := g.Stats()
		if s.InFlight != 2 || s.Agents["a"] != (AgentStats{InFlight: 1, Queued: 1}) || s.Agents["b"].InFlight != 1 {
			t.Fatalf("stats = %+v", s)
		}
		a.Release()
		synctest.Wait()
		if got := rec.get(); !slices.Equal(got, []string{"a2"}) {
			t.Fatalf("after a's release: %v, want [a2]", got)
		}
		b.Release()
		if s := g.Stats(); s.InFlight != 0 || len(s.Agents) != 0 {
			t.Fatalf("idle gate stats = %+v", s)
		}
	})
}

func TestGateSetLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(GateConfig{Limit: 1})
		first := mustAcquire(t, g, Request{})
		rec := &recorder{}
		holds := make(chan *Ticket, 10)
		for i := range 4 {
			go func() {
				tk, err := g.Acquire(t.Context(), Request{Agent: fmt.Sprint(i)})
				if err == nil {
					rec.add(fmt.Sprint(i))
					holds <- tk
				}
			}()
		}
		synctest.Wait()
		g.SetLimit(3) // growing admits two waiters at once
		synctest.Wait()
		if n := len(rec.get()); n != 2 {
			t.Fatalf("after growing to 3: %d admitted, want 2", n)
		}
		g.SetLimit(1) // shrinking revokes nothing
		if s := g.Stats(); s.InFlight != 3 || s.Limit != 1 {
			t.Fatalf("after shrink: %+v, want 3 in flight, limit 1", s)
		}
		first.Release()
		(<-holds).Release()
		synctest.Wait()
		if n := len(rec.get()); n != 2 {
			t.Fatalf("admitted with 1 in flight and limit 1: %d, want still 2", n)
		}
		(<-holds).Release() // now 0 in flight: one more may go
		synctest.Wait()
		if n := len(rec.get()); n != 3 {
			t.Fatalf("admitted after draining: %d, want 3", n)
		}
		g.SetLimit(0)
		if g.Limit() != 1 {
			t.Fatalf("SetLimit(0) gave limit %d, want 1", g.Limit())
		}
	})
}

func TestGateCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(GateConfig{Limit: 1})
		hold := mustAcquire(t, g, Request{Agent: "h"})
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := g.Acquire(ctx, Request{Agent: "w"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire = %v, want deadline exceeded", err)
		}
		if waited := time.Since(start); waited != 5*time.Second {
			t.Fatalf("waited %v, want 5s", waited)
		}
		if s := g.Stats(); s.Queued != 0 || len(s.Agents) != 1 {
			t.Fatalf("cancelled waiter left state behind: %+v", s)
		}
		_, err = g.Acquire(ctx, Request{})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire with a dead ctx = %v", err)
		}
		hold.Release()
		if s := g.Stats(); s.InFlight != 0 {
			t.Fatalf("in flight = %d after all released", s.InFlight)
		}
	})
}

// TestGateRace hammers a Gate with acquisitions that are cancelled at random
// moments, many racing with their grant. In flight must never exceed the
// limit, and at the end no slot may be lost.
func TestGateRace(t *testing.T) {
	t.Parallel()
	const (
		limit   = 4
		workers = 32
		rounds  = 200
	)
	g := NewGate(GateConfig{Limit: limit, PerAgent: 3, MaxQueue: workers, AgingStep: time.Millisecond})
	var inFlight, peak, admitted, cancelled atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range rounds {
				ctx, cancel := context.WithCancel(t.Context())
				if rng.IntN(2) == 0 {
					go cancel() // races with the grant
				}
				tk, err := g.Acquire(ctx, Request{Agent: fmt.Sprint(rng.IntN(5)), Class: rng.IntN(3), Cost: float64(rng.IntN(100))})
				if err != nil {
					cancelled.Add(1)
					cancel()
					continue
				}
				admitted.Add(1)
				n := inFlight.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				if rng.IntN(4) == 0 {
					runtime.Gosched() // hold the slot a little longer
				}
				inFlight.Add(-1)
				tk.Release()
				cancel()
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > limit {
		t.Fatalf("peak in flight %d exceeds limit %d", p, limit)
	}
	if s := g.Stats(); s.InFlight != 0 || s.Queued != 0 || len(s.Agents) != 0 {
		t.Fatalf("state left after the race: %+v", s)
	}
	if admitted.Load() == 0 || cancelled.Load() == 0 {
		t.Fatalf("admitted %d, cancelled %d: the race did not exercise both paths", admitted.Load(), cancelled.Load())
	}
	// No slot was lost: limit tickets are available at once.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for i := range limit {
		if _, err := g.Acquire(ctx, Request{Agent: fmt.Sprint(i)}); err == nil {
			t.Fatal("Acquire with a cancelled context succeeded")
		}
	}
	var tks []*Ticket
	for i := range limit {
		tk, err := g.Acquire(t.Context(), Request{Agent: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		tks = append(tks, tk)
	}
	if s := g.Stats(); s.InFlight != limit {
		t.Fatalf("in flight %d, want %d", s.InFlight, limit)
	}
	for _, tk := range tks {
		tk.Release()
	}
}

// TestGateCancelAfterGrant forces the exact race Acquire resolves: the
// waiter is granted and its context is cancelled before it runs, in both
// orders. The slot must not leak: it passes to the next waiter.
func TestGateCancelAfterGrant(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		for _, cancelFirst := range []bool{false, true} {
			g := NewGate(GateConfig{Limit: 1})
			hold := mustAcquire(t, g, Request{Agent: "h"})
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() {
				tk, err := g.Acquire(ctx, Request{Agent: "w"})
				if err == nil {
					tk.Release()
				}
				errc <- err
			}()
			rec := &recorder{}
			synctest.Wait()
			queue(t, g, rec, "next", Request{Agent: "n"})
			// Grant and cancel with no scheduling point in between: the
			// waiter wakes for whichever came first.
			if cancelFirst {
				cancel()
				hold.Release()
			} else {
				hold.Release()
				cancel()
			}
			if err := <-errc; cancelFirst != (err != nil) {
				t.Fatalf("cancel first %v: Acquire = %v", cancelFirst, err)
			}
			synctest.Wait()
			if got := rec.get(); !slices.Equal(got, []string{"next"}) {
				t.Fatalf("next waiter: %v, want admitted", got)
			}
			if s := g.Stats(); s.InFlight != 0 || s.Queued != 0 {
				t.Fatalf("leaked state: %+v", s)
			}
		}
	})
}
