package supervise

import (
	"errors"
	"fmt"

	"github.com/apiary-dev/apiary/internal/sched"
)

// Units is an amount in each budget unit a task has. In a limit, zero
// means that unit is not limited.
type Units struct {
	MicroUSD     int64
	InputTokens  int64
	OutputTokens int64
	ToolCalls    int64
}

// Budget is one task's node in a budget tree: a sched.Budget per limited
// unit. A child's limits are carved out of its parent's remaining capacity
// (Carve), so however many children a task has, at any depth, the spend
// charged anywhere below it never exceeds its own limit; what a closed child
// did not spend flows back. An unlimited unit stays unlimited below.
// Safe for concurrent use.
type Budget struct {
	b [4]*sched.Budget // usd, input, output, tool calls; nil: unlimited
}

// ErrBudget: a carve-out found nothing left in a limited unit (or the
// budget was closed).
var ErrBudget = errors.New("supervise: budget exhausted")

func (u Units) arr() [4]int64 {
	return [4]int64{u.MicroUSD, u.InputTokens, u.OutputTokens, u.ToolCalls}
}

func fromArr(a [4]int64) Units {
	return Units{MicroUSD: a[0], InputTokens: a[1], OutputTokens: a[2], ToolCalls: a[3]}
}

var unitNames = [4]string{"usd", "input_tokens", "output_tokens", "tool_calls"}

// NewBudget returns a root budget with limit (zero units unlimited).
func NewBudget(limit Units) *Budget {
	var b Budget
	for i, v := range limit.arr() {
		if v > 0 {
			b.b[i] = sched.NewBudget(v)
		}
	}
	return &b
}

// Carve makes a child budget. In every unit b limits, the child gets at
// most alpha (0 < alpha ≤ 1) of what b has left, and no more than want
// asks when want sets that unit; in a unit b does not limit, the child gets
// want's limit as its own root. It returns the child and its limits;
// ErrBudget (naming the unit) when a limited unit has nothing left.
func (b *Budget) Carve(alpha float64, want Units) (*Budget, Units, error) {
	if !(alpha > 0 && alpha <= 1) {
		return nil, Units{}, fmt.Errorf("%w: alpha %g", ErrInvalid, alpha)
	}
	var c Budget
	var got [4]int64
	w := want.arr()
	for i, pb := range b.b {
		if pb == nil {
			if w[i] > 0 {
				c.b[i], got[i] = sched.NewBudget(w[i]), w[i]
			}
			continue
		}
		kid, err := pb.Carve(alpha, w[i])
		if err != nil {
			for _, k := range c.b[:i] {
				if k != nil {
					k.Close()
				}
			}
			if errors.Is(err, sched.ErrBudgetExhausted) || errors.Is(err, sched.ErrClosed) {
				return nil, Units{}, fmt.Errorf("%w: %s: %v", ErrBudget, unitNames[i], err)
			}
			return nil, Units{}, err
		}
		c.b[i], got[i] = kid, kid.Stats().Limit
	}
	return &c, fromArr(got), nil
}

// Charge records spend. In each limited unit, what does not fit in the
// budget is not charged (that would break the tree's invariant) but
// returned as overrun; see sched.Hold.Commit.
func (b *Budget) Charge(spend Units) (overrun Units) {
	var over [4]int64
	s := spend.arr()
	for i, bb := range b.b {
		if bb == nil || s[i] <= 0 {
			continue
		}
		h, err := bb.Reserve(0)
		if err != nil {
			over[i] = s[i]
			continue
		}
		over[i] = h.Commit(s[i])
	}
	return fromArr(over)
}

// Remaining returns what is left in each limited unit (zero for unlimited
// units: read Limited to tell them apart).
func (b *Budget) Remaining() Units {
	var r [4]int64
	for i, bb := range b.b {
		if bb != nil {
			r[i] = bb.Stats().Remaining
		}
	}
	return fromArr(r)
}

// Spent returns what was charged here and in settled children.
func (b *Budget) Spent() Units {
	var r [4]int64
	for i, bb := range b.b {
		if bb != nil {
			r[i] = bb.Stats().Spent
		}
	}
	return fromArr(r)
}

// Limited reports which units b limits.
func (b *Budget) Limited() [4]bool {
	var l [4]bool
	for i, bb := range b.b {
		l[i] = bb != nil
	}
	return l
}

// Close ends the budget: no more carve-outs; what it did not spend goes
// back to its parent once its children are closed.
func (b *Budget) Close() {
	for _, bb := range b.b {
		if bb != nil {
			bb.Close()
		}
	}
}
