package supervise

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestBudgetConservation is the property: however many children a task
// spawns, to any depth, with any alpha and any (over)spending, the spend
// charged to its descendants never exceeds its own limit — at every node —
// and a child never gets more than alpha of what its parent has left.
func TestBudgetConservation(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		limit := Units{MicroUSD: 1 + r.Int64N(5_000_000), InputTokens: 1 + r.Int64N(1_000_000)}
		alpha := 0.05 + 0.95*r.Float64()
		type node struct {
			b       *Budget
			limit   Units
			charged Units // charged at this node itself
			kids    []*node
		}
		root := &node{b: NewBudget(limit), limit: limit}
		all := []*node{root}
		for range 1 + r.IntN(60) {
			p := all[r.IntN(len(all))]
			before := p.b.Remaining()
			want := Units{MicroUSD: r.Int64N(2 * max(before.MicroUSD, 1)), InputTokens: r.Int64N(2 * max(before.InputTokens, 1))}
			if r.IntN(3) == 0 {
				want = Units{} // take alpha of what is left
			}
			kid, got, err := p.b.Carve(alpha, want)
			if err != nil {
				if !errors.Is(err, ErrBudget) {
					t.Fatalf("seed %d: carve: %v", seed, err)
				}
				continue
			}
			if float64(got.MicroUSD) > alpha*float64(before.MicroUSD)+1 || float64(got.InputTokens) > alpha*float64(before.InputTokens)+1 {
				t.Fatalf("seed %d: carved %+v > alpha %.2f of %+v", seed, got, alpha, before)
			}
			n := &node{b: kid, limit: got}
			p.kids = append(p.kids, n)
			all = append(all, n)
			// Spend at random nodes, sometimes far beyond their limits.
			s := all[r.IntN(len(all))]
			spend := Units{MicroUSD: r.Int64N(2*s.limit.MicroUSD + 2), InputTokens: r.Int64N(2*s.limit.InputTokens + 2)}
			over := s.b.Charge(spend)
			s.charged.MicroUSD += spend.MicroUSD - over.MicroUSD
			s.charged.InputTokens += spend.InputTokens - over.InputTokens
			if r.IntN(4) == 0 && s != root {
				s.b.Close()
			}
		}
		var check func(n *node) Units
		check = func(n *node) Units {
			sum := n.charged
			for _, k := range n.kids {
				ks := check(k)
				sum.MicroUSD += ks.MicroUSD
				sum.InputTokens += ks.InputTokens
			}
			if sum.MicroUSD > n.limit.MicroUSD || sum.InputTokens > n.limit.InputTokens {
				t.Fatalf("seed %d: subtree spent %+v over its limit %+v", seed, sum, n.limit)
			}
			return sum
		}
		check(root)
	}
}

func TestBudgetUnlimitedUnits(t *testing.T) {
	t.Parallel()
	b := NewBudget(Units{MicroUSD: 100})
	kid, got, err := b.Carve(0.5, Units{ToolCalls: 7, MicroUSD: 80})
	if err != nil || got != (Units{MicroUSD: 50, ToolCalls: 7}) {
		t.Fatalf("carve %+v, %v", got, err)
	}
	if over := kid.Charge(Units{MicroUSD: 60, ToolCalls: 3, OutputTokens: 1 << 40}); over != (Units{MicroUSD: 10}) {
		t.Errorf("overrun %+v", over)
	}
	if l := b.Limited(); !l[0] || l[1] || l[3] {
		t.Errorf("limited %v", l)
	}
	kid.Close()
	if rem := b.Remaining(); rem.MicroUSD != 50 {
		t.Errorf("parent remaining after the child closed: %+v", rem)
	}
	if _, _, err := b.Carve(0, Units{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("alpha 0: %v", err)
	}
	tiny := NewBudget(Units{MicroUSD: 1})
	tiny.Charge(Units{MicroUSD: 1})
	if _, _, err := tiny.Carve(0.5, Units{}); !errors.Is(err, ErrBudget) {
		t.Errorf("nothing left: %v", err)
	}
}
