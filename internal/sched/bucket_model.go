package sched

import (
	"math"
	"sort"
	"time"
)

// Debit history granularity and retention, in fractions and multiples of
// the bucket's period. Headers from a request sent longer ago than the
// retention are still used, only less precisely.
const (
	histSlots     = 64
	histRetention = 4
	histAhead     = 16 // periods; debits further ahead are not itemized
)

// peak is the Continuous balance just before a scheduled send.
type peak struct {
	at  int64 // UnixNano
	bal float64
}

// refill is what the configured rate adds between from and to.
func (b *Bucket) refill(from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	return b.capacity * float64(to.Sub(from)) / float64(b.per)
}

// project returns the Continuous balance at t (not before tailAt) if
// nothing more is scheduled: the refill from the latest send, none before
// the server's reset, and at least jumpTo from it on.
func (b *Bucket) project(t time.Time) float64 {
	bal, from := b.bal, b.tailAt
	if !b.freeze.IsZero() && from.Before(b.freeze) {
		if t.Before(b.freeze) {
			return bal
		}
		bal, from = max(bal, min(b.capacity, b.jumpTo)), b.freeze
	}
	return min(b.capacity, bal+b.refill(from, t))
}

// contObserveExact folds in a continuous server's remaining count r for a
// request marked sent, when the server gives no reset (or it is ignored):
// the server's balance is r refilled since the request was sent, less our
// debits it may not have seen (sent after it, or not sent yet). Counting
// those as unseen errs on the safe side — a continuous bucket offers no
// window boundary at which an over-count would be forgiven — and the bound
// only ever lowers our own balance, never raises it.
func (b *Bucket) contObserveExact(r, unsent float64, sent time.Time) {
	at := b.tailAt
	if sent.After(at) {
		at = sent
	}
	bound := min(b.capacity, r+b.refill(sent, at)) - unsent
	b.bal, b.tailAt = b.project(at), at
	if bound < b.bal {
		b.bal = bound
		b.reset = sent
	}
}

// contReady returns when a Continuous reservation of n could go, after
// the latest scheduled send.
func (b *Bucket) contReady(now time.Time, n float64) time.Time {
	t := b.tailAt
	if now.After(t) {
		t = now
	}
	need := min(n, b.capacity)
	bal := b.project(t)
	if bal >= need {
		return t
	}
	if !b.freeze.IsZero() && t.Before(b.freeze) {
		// Nothing comes before the server's reset.
		t = b.freeze
		if bal = b.project(t); bal >= need {
			return t
		}
	}
	return t.Add(durationOf(math.Ceil((need - bal) * float64(b.per) / b.capacity)))
}

// contTake debits n at t, not before the latest scheduled send.
func (b *Bucket) contTake(now, t time.Time, n float64) {
	if t.Before(b.tailAt) {
		t = b.tailAt
	}
	pre := b.project(t)
	b.bal, b.tailAt = pre-n, t
	if !b.freeze.IsZero() {
		if t.Before(b.freeze) {
			b.jumpTo -= n
		} else {
			b.freeze = time.Time{}
		}
	}
	// Keep the balances before sends, each the largest from its time on:
	// a later, larger one makes the earlier ones irrelevant.
	at := t.UnixNano()
	for len(b.peaks) > 0 && b.peaks[len(b.peaks)-1].bal <= pre {
		b.peaks = b.peaks[:len(b.peaks)-1]
	}
	b.peaks = append(b.peaks, peak{at: at, bal: pre})
	if old := now.UnixNano() - int64(histRetention)*int64(b.per); b.peaks[0].at < old {
		i := sort.Search(len(b.peaks), func(i int) bool { return b.peaks[i].at >= old })
		b.peaks = append(b.peaks[:0], b.peaks[i:]...)
	}
}

// credit gives back n tokens that the server regained at from and still
// has at now. They carry over to the latest scheduled send unless the
// server's bucket could have reached its cap in between and lost them. The
// model's balance between two sends never exceeds its balance just before
// the later one, so the credit is limited by the highest of those after
// from; and as the model is a lower bound of the server, the server caps no
// earlier than the model would. (Sends at from itself come before the
// credit: a request's own send, and those released with it, whose
// balances are at most its own less its reservation, which bounds n.) A
// credit older than what is remembered is dropped.
func (b *Bucket) credit(n float64, from, now time.Time) {
	at := from.UnixNano()
	if at < now.UnixNano()-int64(histRetention)*int64(b.per) {
		return
	}
	i := sort.Search(len(b.peaks), func(i int) bool { return b.peaks[i].at > at })
	if i < len(b.peaks) {
		n = min(n, b.capacity-b.peaks[i].bal)
	}
	if n <= 0 {
		return
	}
	// The model's balance rises by n from then on.
	for k := i; k < len(b.peaks); k++ {
		b.peaks[k].bal += n
	}
	if i < len(b.peaks) {
		k := i
		for k > 0 && b.peaks[k-1].bal <= b.peaks[i].bal {
			k--
		}
		b.peaks = append(b.peaks[:k], b.peaks[i:]...)
	}
	if now.Before(b.tailAt) {
		b.bal = min(b.capacity, b.bal+n)
		return
	}
	b.bal, b.tailAt = min(b.capacity, b.project(now)+n), now
	if !b.freeze.IsZero() && !now.Before(b.freeze) {
		b.freeze = time.Time{}
	}
}

// contObserve folds in a server observation (see Observe).
func (b *Bucket) contObserve(r, later, own float64, covered bool, reset, sent time.Time) {
	// Bound the server's balance just after our latest scheduled send.
	at := b.tailAt
	if sent.After(at) {
		at = sent
	}
	// drain and debits count the observed request again (it is in the
	// slot of sent): own compensates.
	var bound float64
	switch {
	case !covered:
		bound = r // our own count has the rest
	case reset.IsZero():
		bound = b.drain(r+own, sent, at)
	case at.Before(reset):
		bound = r - later
	default:
		// Full at reset less what came before it, then refilled. The
		// slot holding reset counts as before it, and refills only after.
		end := b.hstart.Add(time.Duration(b.slot(reset)+1) * max(b.per/histSlots, 1))
		bound = b.capacity - (b.debits(sent, end) - own)
		if at.After(end) {
			bound = b.drain(bound, end, at)
		}
	}
	b.bal, b.tailAt = b.project(at), at
	if !b.freeze.IsZero() && !at.Before(b.freeze) {
		b.freeze = time.Time{}
	}
	if bound < b.bal {
		b.bal = bound
		b.reset = sent
	}
	if reset.After(at) {
		// Everything scheduled so far comes before reset; what is
		// scheduled before it from now on is taken off as it comes.
		b.freeze = reset
		b.jumpTo = math.Inf(-1) // no jump without the history
		if covered {
			b.jumpTo = b.capacity - later
		}
	}
}

// slot returns the history slot holding t.
func (b *Bucket) slot(t time.Time) int64 {
	w := max(b.per/histSlots, 1)
	d := t.Sub(b.hstart)
	k := int64(d / w)
	if d%w < 0 {
		k--
	}
	return k
}

// record remembers, at now, a debit of n reaching the server at t. Records
// are kept in time order: a debit recorded after a later one is filed with
// it, which only makes it count in more observations (conservative).
func (b *Bucket) record(now, t time.Time, n float64) {
	if t.Before(b.lastAt) {
		t = b.lastAt
	}
	b.lastAt = t
	k := b.slot(t)
	if i := k - b.h0; len(b.hist) > 0 && i >= 0 && i < int64(len(b.hist)) {
		b.hist[i] += n // the common case: a slot already open
		return
	}
	nowSlot := b.slot(now)
	if k-nowSlot > histAhead*histSlots {
		// Far ahead (after a long pause): only remember that the history
		// is incomplete until then.
		b.far = t
		return
	}
	if len(b.hist) == 0 {
		b.h0 = k
	}
	for int64(len(b.hist)) <= k-b.h0 {
		b.hist = append(b.hist, 0)
	}
	b.hist[k-b.h0] += n
	// Forget slots older than the retention.
	if old := nowSlot - b.h0 - histRetention*histSlots; old > 0 {
		b.hist = append(b.hist[:0], b.hist[old:]...)
		b.h0 += old
		b.trimmed = true
	}
}

// since returns an upper bound on the debits reaching the server at or
// after from (the whole slot holding from counts, and so the observed
// request itself: conservative by at most one slot and one request), and
// whether the history reaches back that far.
func (b *Bucket) since(from time.Time) (n float64, covered bool) {
	k := b.slot(from)
	if k < b.h0 && b.trimmed || !b.far.IsZero() && !b.far.Before(from) {
		return 0, false
	}
	for i := max(k-b.h0, 0); i < int64(len(b.hist)); i++ {
		n += b.hist[i]
	}
	return n, true
}

// debits returns an upper bound on the debits reaching the server in
// [from, to): every slot that overlaps counts whole.
func (b *Bucket) debits(from, to time.Time) float64 {
	var n float64
	lo, hi := b.slot(from)-b.h0, b.slot(to.Add(-1))-b.h0
	for i := max(lo, 0); i <= min(hi, int64(len(b.hist))-1); i++ {
		n += b.hist[i]
	}
	return n
}

// drain returns a lower bound on a continuous server's balance at to, given
// x at from and the recorded debits from then on: slot by slot it refills
// (capped at the limit) before it debits, and counts a slot's debits whole
// even if from falls inside it.
func (b *Bucket) drain(x float64, from, to time.Time) float64 {
	w := max(b.per/histSlots, 1)
	k, last := b.slot(from), b.h0+int64(len(b.hist))-1
	t := from
	for ; k <= last && t.Before(to); k++ {
		end := b.hstart.Add(time.Duration(k+1) * w)
		if end.After(to) {
			end = to
		}
		x = min(b.capacity, x+b.refill(t, end))
		if i := k - b.h0; i >= 0 {
			x -= b.hist[i]
		}
		t = end
	}
	return min(b.capacity, x+b.refill(t, to))
}

// window returns the number of the Step window holding t.
func (b *Bucket) window(t time.Time) int64 {
	d, p := t.Sub(b.epoch), b.per
	w := int64(d / p)
	if d%p < 0 {
		w--
	}
	return w
}

// roll moves the Step placement window up to cur if it is behind.
func (b *Bucket) roll(cur int64) {
	if b.tail < cur {
		if b.tail == cur-1 {
			b.prev = b.used
		} else {
			b.prev = 0
		}
		b.tail, b.used = cur, 0
	}
}

// stepReady returns the start of the first window, from the latest
// placement on, where min(n, limit) fits (or now, if that is the current
// one). A priority reservation may also take room left in the current window
// after later ones were already placed in the next.
func (b *Bucket) stepReady(now time.Time, n float64, prio bool) time.Time {
	cur := b.window(now)
	tail, used := b.tail, b.used
	if tail < cur {
		tail, used = cur, 0
	}
	if prio && tail == cur+1 && b.prev+min(n, b.capacity) <= b.capacity {
		return now
	}
	if used+min(n, b.capacity) > b.capacity {
		tail++
	}
	if tail == cur {
		return now
	}
	return b.epoch.Add(time.Duration(tail) * b.per)
}

// stepTake places n in the window holding t.
func (b *Bucket) stepTake(t time.Time, n float64, prio bool) {
	w := b.window(t)
	if prio && b.tail == w+1 && b.prev+min(n, b.capacity) <= b.capacity {
		b.prev += n // into the current window, behind the next one's
		return
	}
	b.roll(w)
	if b.used+min(n, b.capacity) > b.capacity {
		b.prev, b.used = b.used, 0
		b.tail++
	}
	b.place(n)
}

// place adds n to the latest window; what exceeds the limit spills into the
// following windows.
func (b *Bucket) place(n float64) {
	b.used += n
	for b.used > b.capacity {
		b.prev = b.capacity
		b.used -= b.capacity
		b.tail++
	}
}

// stepObserve folds in a server observation (see Observe).
func (b *Bucket) stepObserve(r, later float64, reset, sent time.Time) {
	b.roll(b.window(sent))
	if !reset.IsZero() && b.window(reset)*int64(b.per) != int64(reset.Sub(b.epoch)) {
		b.realign(sent, reset)
	}
	if cur := b.window(sent); b.tail == cur && b.capacity-r+later > b.used {
		b.used = min(b.capacity-r+later, b.capacity)
		b.reset = sent
	}
}

// realign moves the Step window boundaries so that one falls at reset. A
// reservation already placed keeps its time; the latest window maps to the
// new window holding its start, and the new current window is charged with
// everything placed in the old current and previous windows it overlaps.
func (b *Bucket) realign(now, reset time.Time) {
	cur := b.window(now)
	if b.tail > cur {
		start := b.epoch.Add(time.Duration(b.tail) * b.per)
		b.epoch = reset
		b.tail, b.prev = b.window(start), b.capacity
		if b.tail <= b.window(now) {
			// The placements land in the server's current window, whose
			// other use we cannot add up: treat it as full.
			b.tail, b.used = b.window(now), b.capacity
		}
	} else {
		used := min(b.used+b.prev, b.capacity)
		b.epoch = reset
		b.tail, b.used, b.prev = b.window(now), used, 0
	}
	b.reset = now
}

// durationOf converts nanoseconds to a Duration, saturating.
func durationOf(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}
