package supervise

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"
)

// Quorum tracks N speculative attempts of one task of which K must pass:
// the task continues as soon as K have passed (the rest are cancelled) and
// fails as soon as K can no longer pass. Hedging is a Quorum with K = 1
// whose second attempt starts late. Attempts are numbered from 0 in start
// order. Not safe for concurrent use: the scheduler that owns the task
// drives it.
type Quorum struct {
	n, k    int
	started int
	passed  []int
	failed  []int
	over    bool
}

// Verdict is a Quorum's state after an attempt's outcome.
type Verdict int

// Verdicts.
const (
	Pending Verdict = iota // more outcomes are needed
	Reached                // K attempts passed: continue, cancel the others
	Lost                   // fewer than K can still pass: the task fails
)

func (v Verdict) String() string {
	switch v {
	case Reached:
		return "reached"
	case Lost:
		return "lost"
	}
	return "pending"
}

// NewQuorum returns a Quorum of n attempts of which k must pass; 1 ≤ k ≤ n.
func NewQuorum(n, k int) (*Quorum, error) {
	if k < 1 || n < k {
		return nil, fmt.Errorf("%w: quorum k=%d of n=%d", ErrInvalid, k, n)
	}
	return &Quorum{n: n, k: k}, nil
}

// Start numbers the next attempt; false once n were started or the quorum
// is decided.
func (q *Quorum) Start() (int, bool) {
	if q.over || q.started >= q.n {
		return 0, false
	}
	q.started++
	return q.started - 1, true
}

// Grow allows one more attempt beyond n (a hedge added to a running task).
func (q *Quorum) Grow() { q.n++ }

// Pass records that attempt i passed.
func (q *Quorum) Pass(i int) Verdict {
	if !q.over && !q.known(i) {
		q.passed = append(q.passed, i)
	}
	return q.verdict()
}

// Fail records that attempt i failed (or was cancelled).
func (q *Quorum) Fail(i int) Verdict {
	if !q.over && !q.known(i) {
		q.failed = append(q.failed, i)
	}
	return q.verdict()
}

func (q *Quorum) known(i int) bool {
	return slices.Contains(q.passed, i) || slices.Contains(q.failed, i)
}

func (q *Quorum) verdict() Verdict {
	switch {
	case len(q.passed) >= q.k:
		q.over = true
		return Reached
	case q.n-len(q.failed) < q.k:
		q.over = true
		return Lost
	}
	return Pending
}

// Passed returns the attempts that passed, in the order they passed: the
// first is the one to keep.
func (q *Quorum) Passed() []int { return slices.Clone(q.passed) }

// Durations keeps the last observed durations (of attempts of one kind) to
// estimate quantiles. Safe for concurrent use; the zero value keeps 256.
type Durations struct {
	mu   sync.Mutex
	keep int
	ds   []time.Duration // ring
	next int
}

// Observe records one duration.
func (d *Durations) Observe(x time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.keep == 0 {
		d.keep = 256
	}
	if len(d.ds) < d.keep {
		d.ds = append(d.ds, x)
		return
	}
	d.ds[d.next] = x
	d.next = (d.next + 1) % d.keep
}

// Quantile returns the q-quantile (0 < q ≤ 1, nearest rank) of what was
// observed and the number of samples; false if there are none.
func (d *Durations) Quantile(q float64) (time.Duration, int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.ds) == 0 || !(q > 0 && q <= 1) {
		return 0, len(d.ds), false
	}
	s := slices.Clone(d.ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(rank, 0)], len(s), true
}

// Hedge decides when to start a task's second attempt.
type Hedge struct {
	// After, if positive, is the fixed delay (a plan's hedge_after_s).
	After time.Duration
	// Quantile of the observed durations to hedge at otherwise (default
	// 0.9), once MinSamples (default 5) were observed.
	Quantile   float64
	MinSamples int
	// Fallback is the delay while too few durations are known (typically
	// a multiple of the task's estimate); zero: do not hedge then.
	Fallback time.Duration
}

// Delay returns how long after its first attempt started a task's hedge
// should start, from what obs has seen; false: do not hedge.
func (h Hedge) Delay(obs *Durations) (time.Duration, bool) {
	if h.After > 0 {
		return h.After, true
	}
	q, minN := h.Quantile, h.MinSamples
	if q == 0 {
		q = 0.9
	}
	if minN <= 0 {
		minN = 5
	}
	if obs != nil {
		if d, n, ok := obs.Quantile(q); ok && n >= minN {
			return d, true
		}
	}
	return h.Fallback, h.Fallback > 0
}
