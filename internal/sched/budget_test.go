package sched

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

func TestBudgetReserve(t *testing.T) {
	t.Parallel()
	b := NewBudget(1000)
	h1, err := b.Reserve(600)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Reserve(401)
	var ee *ExhaustedError
	if !errors.Is(err, ErrBudgetExhausted) || !errors.As(err, &ee) ||
		*ee != (ExhaustedError{Limit: 1000, Spent: 0, Reserved: 600, Requested: 401}) {
		t.Fatalf("Reserve(401) = %v, want exhausted with limit 1000, reserved 600", err)
	}
	if _, err := b.Reserve(-1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Reserve(-1) = %v, want ErrInvalid", err)
	}
	if over := h1.Commit(250); over != 0 {
		t.Fatalf("overrun %d", over)
	}
	h1.Commit(600) // settled already: ignored
	h1.Cancel()
	if s := b.Stats(); s.Spent != 250 || s.Reserved != 0 || s.Remaining != 750 {
		t.Fatalf("stats %+v, want 250 spent and 750 left", s)
	}
	h2, _ := b.Reserve(700)
	h2.Cancel()
	if s := b.Stats(); s.Remaining != 750 {
		t.Fatalf("after cancel: %+v", s)
	}
}

func TestBudgetOverrun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		hold, other int64
		actual      int64
		wantSpent   int64
		wantOverrun int64
	}{
		{"within the hold", 100, 0, 80, 80, 0},
		{"beyond the hold, into free room", 100, 0, 150, 150, 0},
		{"beyond the limit is capped", 100, 850, 300, 150, 150},
		{"negative actual is zero", 100, 0, -5, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := NewBudget(1000)
			h, _ := b.Reserve(tc.hold)
			o, _ := b.Reserve(tc.other)
			if over := h.Commit(tc.actual); over != tc.wantOverrun {
				t.Fatalf("overrun %d, want %d", over, tc.wantOverrun)
			}
			s := b.Stats()
			if s.Spent != tc.wantSpent || s.Overrun != tc.wantOverrun || s.Spent+s.Reserved > s.Limit {
				t.Fatalf("stats %+v, want spent %d, overrun %d, within the limit", s, tc.wantSpent, tc.wantOverrun)
			}
			o.Cancel()
		})
	}
}

func TestBudgetChildren(t *testing.T) {
	t.Parallel()
	root := NewBudget(1000)
	c, err := root.Child(400)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Child(601); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("Child(601) with 600 left = %v", err)
	}
	g, err := c.Carve(0.5, 0) // half of the child's 400
	if err != nil || g.Stats().Limit != 200 {
		t.Fatalf("Carve(0.5) = %v, %v; want a 200 budget", g.Stats(), err)
	}
	if g2, err := c.Carve(0.5, 50); err != nil || g2.Stats().Limit != 50 {
		t.Fatalf("Carve(0.5, 50) = %v, %v; want 50", g2.Stats(), err)
	} else {
		g2.Close()
	}
	for _, alpha := range []float64{0, -1, 1.5} {
		if _, err := c.Carve(alpha, 0); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Carve(%v) = %v, want ErrInvalid", alpha, err)
		}
	}
	h, _ := g.Reserve(150)
	g.Close()
	if _, err := g.Reserve(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reserve on a closed budget = %v", err)
	}
	// Closing returned the 50 g did not hold; the hold is still carved.
	if s := c.Stats(); s.Carved != 150 || s.Remaining != 250 {
		t.Fatalf("child after grandchild close: %+v, want 150 carved, 250 left", s)
	}
	h.Commit(100)
	// Settled: g's 100 of spend moves up, its unused 50 comes back.
	if s := c.Stats(); s.Carved != 0 || s.Spent != 100 || s.Remaining != 300 {
		t.Fatalf("child after grandchild settled: %+v, want 100 spent, 300 left", s)
	}
	c.Close()
	if s := root.Stats(); s.Carved != 0 || s.Spent != 100 || s.Remaining != 900 {
		t.Fatalf("root after all closed: %+v, want 100 spent, 900 left", s)
	}
	c.Close() // idempotent
	if _, err := c.Child(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Child on a closed budget = %v", err)
	}
	if _, err := root.Carve(1, 0); err != nil {
		t.Fatalf("Carve(1) of the whole rest: %v", err)
	}
	if _, err := root.Carve(0.5, 0); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("Carve with nothing left = %v", err)
	}
}

// TestBudgetConcurrentNeverOvershoots: 100 goroutines race to reserve 10
// each from 505; exactly 50 may succeed.
func TestBudgetConcurrentNeverOvershoots(t *testing.T) {
	t.Parallel()
	b := NewBudget(505)
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			if h, err := b.Reserve(10); err == nil {
				ok.Add(1)
				h.Commit(10)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 50 || b.Stats().Spent != 500 {
		t.Fatalf("%d reservations succeeded (spent %d), want 50 (500)", ok.Load(), b.Stats().Spent)
	}
}

// TestBudgetTreeConservation is a property test: random trees of budgets
// are grown, spent from (including commits above the hold), carved and
// closed by concurrent goroutines. At every node spent + reserved + carved
// never exceeds the limit, the total charged anywhere never exceeds the
// root's limit, and once everything is closed the root's spend is exactly
// the total charged.
func TestBudgetTreeConservation(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		const limit = 100_000
		root := NewBudget(limit)
		var charged atomic.Int64
		var mu sync.Mutex
		var all []*Budget

		var grow func(b *Budget, rng *rand.Rand, depth int)
		grow = func(b *Budget, rng *rand.Rand, depth int) {
			defer b.Close()
			mu.Lock()
			all = append(all, b)
			mu.Unlock()
			var wg sync.WaitGroup
			for i := range 2 + rng.IntN(20) {
				switch op := rng.IntN(10); {
				case (i == 0 || op < 2) && depth < 4:
					var c *Budget
					var err error
					if i == 0 || rng.IntN(2) == 0 {
						c, err = b.Carve(0.1+0.4*rng.Float64(), 0)
					} else {
						c, err = b.Child(rng.Int64N(limit / 4))
					}
					if err != nil {
						continue
					}
					crng := rand.New(rand.NewPCG(rng.Uint64(), seed))
					wg.Go(func() { grow(c, crng, depth+1) })
				default:
					h, err := b.Reserve(rng.Int64N(2000))
					if err != nil {
						continue
					}
					actual := rng.Int64N(3000) // sometimes above the hold
					if rng.IntN(5) == 0 {
						h.Cancel()
						continue
					}
					over := h.Commit(actual)
					if c := charged.Add(actual - over); c > limit {
						t.Errorf("seed %d: %d charged in the tree, above the root's %d", seed, c, limit)
					}
					if s := b.Stats(); s.Spent+s.Reserved+s.Carved > s.Limit {
						t.Errorf("seed %d: node %+v over its limit", seed, s)
					}
				}
			}
			wg.Wait()
		}
		grow(root, rand.New(rand.NewPCG(seed, 99)), 0)

		for _, b := range all {
			if s := b.Stats(); s.Spent+s.Reserved+s.Carved > s.Limit || s.Reserved != 0 || s.Carved != 0 {
				t.Fatalf("seed %d: node %+v breaks spent+reserved+carved <= limit or kept something outstanding", seed, s)
			}
		}
		if s := root.Stats(); s.Spent != charged.Load() || s.Spent > limit {
			t.Fatalf("seed %d: root spent %d, charged %d, limit %d", seed, s.Spent, charged.Load(), limit)
		}
		if len(all) < 5 {
			t.Fatalf("seed %d: only %d budgets: the tree did not grow", seed, len(all))
		}
	}
}
