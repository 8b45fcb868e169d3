package sched

import (
	"math"
	"time"
)

// Source says where a limit's figure came from.
type Source uint8

const (
	// SourceNone: not known.
	SourceNone Source = iota
	// SourceConfigured: given by the operator.
	SourceConfigured
	// SourceLearned: read from or inferred from the server's headers.
	SourceLearned
	// SourceAssumed: neither; a default stands in until one of the others.
	SourceAssumed
)

func (s Source) String() string {
	switch s {
	case SourceConfigured:
		return "configured"
	case SourceLearned:
		return "learned"
	case SourceAssumed:
		return "assumed"
	}
	return ""
}

// Observation is one dimension's rate-limit headers on one response.
type Observation struct {
	// Limit and Remaining are negative when unknown.
	Limit, Remaining int64
	// Reset is when the server's window ends (or its bucket is full
	// again); zero when unknown. The true time is within Precision of it,
	// whether the server truncated, rounded or rounded it up.
	Reset     time.Time
	Precision time.Duration
	// Relative marks a reset the server wrote as a delay: Reset is the
	// receive time plus the delay, which the server measured when it
	// answered, at most one round trip earlier.
	Relative bool
}

// assumedPeriod stands in for a period that is neither configured nor
// learned, only to decide when figures that nothing refreshes are stale.
const assumedPeriod = time.Minute

// window models one dimension of a server's limit as fixed windows: a count
// that resets to zero at a boundary. The model is a lower bound of the
// server's capacity for both kinds of server: a fixed-window one does
// exactly this, and a continuous bucket, whose reset is the time it will be
// full again, holds at least the limit at that time.
//
// The model never places a request after a boundary it has not seen: past
// the end of the current window it holds requests unplaced until an answer
// from the next window says where that one ends. Window ends are intervals:
// a reset written to the second is ±1 s, and the model releases the next
// window's requests at the interval's late end. Answers narrow the interval
// (a request counted in a window arrived before its end; one counted in the
// next arrived after it), and for resets written as absolute times the
// narrowing carries over to the next windows (their ends have the same
// offset from the written value when the period is a whole number of the
// resets' unit, and the offset is relearned when it is not). While the
// interval stays wide and the window is full, one request a window is sent
// at its middle as a probe.
//
// The count in the current window is the highest count any answer from it
// reported (limit less remaining) plus every request granted and not yet
// answered: the highest count includes every answered request counted
// before it, and those not answered may or may not be counted yet. For
// requests (which the server counts one each, as we do) the count is
// tighter: a reported count above the requests answered in the window must
// include requests still in flight, so those are not counted twice. (Were
// other clients sending on the same account, their requests would be
// taken for ours; the error is at most what is in flight, and the server's
// 429 corrects it.)
type window struct {
	conf    float64       // configured limit; 0: none
	confPer time.Duration // configured period
	limit   float64       // effective limit; 0: unknown
	src     Source

	n        int64         // number of the current window
	ref      time.Time     // nominal end of the current window; zero: unknown
	lo, hi   time.Duration // the end lies in [ref+lo, ref+hi]
	abs      bool          // ref was written as an absolute time
	prec     time.Duration // of ref
	seen     float64       // highest count reported in the current window
	inflight float64       // granted, not answered
	exact    bool          // the server counts requests as we do (see est)
	answered float64       // answers in the current window, for exact
	prevAns  float64       // answered, in the window before
	probed   bool          // a probe went in the current window
	own      bool          // ref is our own clock (configured, no headers yet)

	prevRef        time.Time // nominal end of the window before, once rolled
	prevLo, prevHi time.Duration
	prevAbs        bool

	// The end's offset from the written reset, learned across windows
	// written as absolute times.
	offLo, offHi time.Duration
	offSet       bool

	period    time.Duration
	periodSrc Source
	lastObs   time.Time // receive time of the latest figures

	// A continuous bucket, once its resets show it (they move later
	// within what would be one window): its level is at least lvl at lvlAt
	// and refills at rateLo per nanosecond at least.
	bucketEvidence int
	bucket         bool
	lvl            float64
	lvlAt          time.Time
	rateLo         float64
	nowHint        time.Time // the time of the latest roll, for est
}

func (w *window) configure(r Rate) {
	if r.Limit <= 0 {
		return
	}
	w.conf, w.limit, w.src = float64(r.Limit), float64(r.Limit), SourceConfigured
	w.confPer = r.Per
	if w.confPer <= 0 {
		w.confPer = time.Minute
	}
	w.period, w.periodSrc = w.confPer, SourceConfigured
}

// est is the model's count in the current window (for a bucket: the limit
// less its level now, as of the latest pump).
func (w *window) est() float64 {
	if w.bucket {
		return w.limit - w.level(w.nowHint) + w.inflight
	}
	return w.seen + w.inflight - w.countedInFlight()
}

// countedInFlight is how many of the requests in flight the highest
// reported count must include: it counts at most the requests answered in
// the window, and the rest of it are requests not answered yet.
func (w *window) countedInFlight() float64 {
	if !w.exact {
		return 0
	}
	return min(w.inflight, max(w.seen-w.answered, 0))
}

// next starts the count of the window after the current one.
func (w *window) next() {
	w.n++
	w.seen, w.probed = 0, false
	w.prevAns, w.answered = w.answered, 0
}

// level is a bucket's least level at t.
func (w *window) level(t time.Time) float64 {
	if t.Before(w.lvlAt) {
		t = w.lvlAt
	}
	return min(w.limit, w.lvl+w.rateLo*float64(t.Sub(w.lvlAt)))
}

// refillAt is when a bucket will hold n more than is in flight (zero: not
// by refilling; an answer must tell).
func (w *window) refillAt(n float64) time.Time {
	need := min(n, w.limit) + w.inflight - min(w.lvl, w.limit)
	if need <= 0 || w.rateLo <= 0 || min(n, w.limit)+w.inflight > w.limit {
		// Refilling alone cannot make room (the bucket caps at the limit,
		// and what is in flight must be answered first).
		return time.Time{}
	}
	return w.lvlAt.Add(time.Duration(math.Ceil(need / w.rateLo)))
}

// end returns the late end of the current window, or zero when unknown.
func (w *window) end() time.Time {
	if w.ref.IsZero() {
		return time.Time{}
	}
	return w.ref.Add(w.hi)
}

// roll starts the next window if now is past the current one's end, or
// the figures are stale (nothing has refreshed them for a period).
func (w *window) roll(now time.Time) {
	w.nowHint = now
	if w.limit == 0 || w.bucket {
		return
	}
	if e := w.end(); !e.IsZero() && !now.Before(e) {
		w.prevRef, w.prevLo, w.prevHi, w.prevAbs = w.ref, w.lo, w.hi, w.abs
		if w.own {
			// Our own clock for a configured limit: the next window's end
			// is one configured period on.
			w.ref = w.ref.Add(w.confPer * time.Duration(1+now.Sub(e)/w.confPer))
		} else {
			w.ref = time.Time{}
		}
		w.next()
		return
	}
	if w.ref.IsZero() && w.seen > 0 && w.inflight <= 0 && !w.lastObs.IsZero() && now.Sub(w.lastObs) >= w.stalePeriod() {
		// Full figures without a reset, and nothing in flight to bring
		// new ones: after a period they are stale.
		w.next()
	}
}

func (w *window) stalePeriod() time.Duration {
	if w.period > 0 {
		return w.period
	}
	return assumedPeriod
}

// staleAt is when roll will drop figures that nothing refreshes.
func (w *window) staleAt() time.Time {
	if !w.ref.IsZero() || w.seen == 0 || w.inflight > 0 || w.lastObs.IsZero() {
		return time.Time{}
	}
	return w.lastObs.Add(w.stalePeriod())
}

// fits reports whether n more fits in the current window.
func (w *window) fits(n float64) bool {
	if w.bucket && n > 0 {
		return w.level(w.nowHint)-w.inflight >= min(n, w.limit)
	}
	return w.limit == 0 || n <= 0 || w.est()+min(n, w.limit) <= w.limit
}

// probeAt returns when a probe may go in the current window (zero: none).
func (w *window) probeAt(width time.Duration) time.Time {
	if w.ref.IsZero() || w.own || !w.abs || w.probed || w.bucket || w.hi-w.lo <= width {
		return time.Time{}
	}
	return w.ref.Add(w.lo + (w.hi-w.lo)/2)
}

// start opens a window of our own clock for a configured limit, at the
// first request, when no server figures are known.
func (w *window) start(now time.Time) {
	if w.ref.IsZero() && w.src == SourceConfigured && w.lastObs.IsZero() {
		w.ref, w.lo, w.hi, w.own = now.Add(w.confPer), 0, 0, true
	}
}

// answer folds in the answer to a request of cost n that was granted in
// window gwin, sent at sent and answered at recv, with the figures o (all
// unknown when the answer had none). counted says the server charged the
// request when it has no figures to say so.
func (w *window) answer(n float64, gwin int64, o Observation, sent, recv time.Time, counted bool) {
	w.inflight = max(w.inflight-n, 0)
	// Every answer counts as one the current window may hold (whether the
	// server charged it or not, and in whichever window): more answers
	// only make countedInFlight smaller.
	defer func() { w.answered += n }()
	known := o.Limit > 0 || o.Remaining >= 0
	if !known {
		if w.own && counted && gwin == w.n {
			w.seen += n
		}
		return
	}
	if o.Limit > 0 {
		l := float64(o.Limit)
		if w.conf > 0 && w.conf < l {
			l = w.conf
		}
		w.limit = l
		if w.src != SourceConfigured || float64(o.Limit) < w.conf {
			w.src = SourceLearned
		}
	}
	if w.limit == 0 {
		return
	}
	w.lastObs = recv
	used := -1.0
	if o.Remaining >= 0 {
		used = max(w.limit-float64(o.Remaining), 0)
	}
	if o.Reset.IsZero() {
		if used >= 0 && !w.own {
			w.seen = max(w.seen, used)
		}
		return
	}
	if w.own {
		// The server's clock replaces ours.
		w.own, w.ref, w.prevRef = false, time.Time{}, time.Time{}
	}
	plo, phi := -o.Precision, o.Precision
	if o.Relative {
		plo -= max(recv.Sub(sent), 0)
	}
	if used >= 0 && o.Reset.Add(phi).After(recv) {
		// (Figures whose bucket would be full already contradict
		// themselves: a full bucket does not report less than the limit.)
		w.bucketFigures(float64(o.Remaining), o.Reset.Add(phi), sent, recv)
	}
	rel := w.relate(o, plo, phi, recv)
	if rel == relNewer && !w.ref.IsZero() && recv.Before(w.ref.Add(w.lo)) && used > 0 {
		// A later reset while the window cannot have ended, with the
		// count not starting over: the server refills continuously.
		if w.bucketEvidence++; w.bucketEvidence >= 2 {
			w.bucket = true
		}
	}
	switch rel {
	case relSame:
		w.narrow(o.Reset, plo, phi)
		w.evidenceBefore(sent)
		if used >= 0 {
			w.seen = max(w.seen, used)
		}
	case relNewer:
		if !w.ref.IsZero() {
			// The window we were in has ended: the first answer from the
			// next one says so.
			w.prevRef, w.prevLo, w.prevHi, w.prevAbs = w.ref, w.lo, w.hi, w.abs
			w.next()
		}
		if !w.prevRef.IsZero() {
			w.evidenceAfterPrev(recv)
			if jump := o.Reset.Sub(w.prevRef); jump > 2*o.Precision {
				w.period, w.periodSrc = jump, SourceLearned
				if w.conf > 0 && w.src == SourceConfigured {
					w.periodSrc = SourceConfigured
					w.period = w.confPer
				}
			}
		}
		w.adopt(o, plo, phi)
		w.evidenceBefore(sent)
		w.seen = max(used, 0)
	case relRevive:
		// We took the window for over, but the server still counts in it:
		// it ends after this request arrived.
		w.ref, w.lo, w.hi, w.abs = w.prevRef, w.prevLo, w.prevHi, w.prevAbs
		w.prevRef = time.Time{}
		w.answered += w.prevAns
		w.evidenceBefore(sent)
		if used >= 0 {
			w.seen = max(w.seen, used)
		}
	case relPrev:
		// A late answer from the window before: its request arrived
		// before that window's end.
		if w.prevAbs && !o.Relative {
			w.offsetLo(sent.Sub(w.prevRef))
		}
	}
}

// bucketFigures folds a continuous bucket's latest figures into its level
// and refill rate: remaining r at the server's time (after sent), full
// again by full at the latest. Its level then was under r+1, so it refills
// at least (limit−r−1)/(full−sent); and it holds at least r at recv. Only
// the latest figures count, so that no older ones can outvote them.
func (w *window) bucketFigures(r float64, full, sent, recv time.Time) {
	if recv.Before(w.lvlAt) {
		return
	}
	w.lvl, w.lvlAt, w.rateLo = r, recv, 0
	if d := full.Sub(sent); d > 0 && w.limit-r-1 > 0 {
		w.rateLo = (w.limit - r - 1) / float64(d)
	}
}

// relation of an observation's window to the model's.
type relation uint8

const (
	relSame relation = iota
	relNewer
	relPrev
	relRevive // the window taken for over is not
)

func (w *window) relate(o Observation, plo, phi time.Duration, recv time.Time) relation {
	cmp := func(ref time.Time, lo, hi time.Duration, abs bool) int {
		if abs && !o.Relative {
			// The same window is written the same way every time.
			d := o.Reset.Sub(ref)
			switch {
			case d > o.Precision/2:
				return 1
			case d < -o.Precision/2:
				return -1
			}
			return 0
		}
		olo, ohi := o.Reset.Add(plo), o.Reset.Add(phi)
		switch {
		case olo.After(ref.Add(hi)):
			return 1
		case ohi.Before(ref.Add(lo)):
			return -1
		}
		return 0
	}
	if !w.ref.IsZero() {
		switch cmp(w.ref, w.lo, w.hi, w.abs) {
		case 1:
			return relNewer
		case -1:
			if !o.Reset.Add(phi).After(recv) {
				return relPrev
			}
			// Figures of a window ending before ours that is not over:
			// one of the two is wrong, so count both in ours.
		}
		return relSame
	}
	if !w.prevRef.IsZero() {
		if c := cmp(w.prevRef, w.prevLo, w.prevHi, w.prevAbs); c <= 0 {
			switch {
			case !o.Reset.Add(phi).After(recv):
				return relPrev
			case c == 0:
				return relRevive
			}
		}
	}
	// After the end of the window before (or the first figures): these
	// describe the current one, unless they are of a window that is over.
	return relNewer
}

// adopt makes o's window the current one.
func (w *window) adopt(o Observation, plo, phi time.Duration) {
	w.ref, w.abs, w.prec = o.Reset, !o.Relative, o.Precision
	w.lo, w.hi = plo, phi
	if w.abs && w.offSet {
		if w.offLo > w.lo {
			w.lo = w.offLo
		}
		if w.offHi < w.hi {
			w.hi = w.offHi
		}
		if w.lo > w.hi {
			w.offSet = false
			w.lo, w.hi = plo, phi
		}
	}
}

// narrow intersects the current end with another observation of it.
func (w *window) narrow(reset time.Time, plo, phi time.Duration) {
	lo, hi := reset.Add(plo).Sub(w.ref), reset.Add(phi).Sub(w.ref)
	nlo, nhi := max(w.lo, lo), min(w.hi, hi)
	if nlo <= nhi {
		w.lo, w.hi = nlo, nhi
	}
}

// evidenceBefore: a request sent at sent was counted in the current window,
// so that window ends after it arrived, and it arrived after sent.
func (w *window) evidenceBefore(sent time.Time) {
	if w.ref.IsZero() || w.own {
		return
	}
	d := sent.Sub(w.ref)
	if d > w.hi {
		// The end was placed too early: it is after d, within the
		// precision.
		w.hi = max(d, w.prec)
	}
	if d > w.lo {
		w.lo = d
	}
	if w.abs {
		w.offsetLo(sent.Sub(w.ref))
	}
}

// evidenceAfterPrev: a request received at recv was counted in a window
// after the previous one, so that one ended before it arrived.
func (w *window) evidenceAfterPrev(recv time.Time) {
	if !w.prevAbs {
		return
	}
	w.offsetHi(recv.Sub(w.prevRef))
}

func (w *window) offsetInit() {
	if !w.offSet {
		w.offLo, w.offHi, w.offSet = -w.prec, w.prec, true
	}
}

func (w *window) offsetLo(d time.Duration) {
	if w.prec == 0 || d <= -w.prec || d > w.prec {
		return
	}
	w.offsetInit()
	if d > w.offLo {
		w.offLo = d
	}
	if w.offLo > w.offHi {
		// The offset moved (a period that is not a whole number of the
		// resets' unit): start over from this evidence.
		w.offLo, w.offHi = d, w.prec
	}
}

func (w *window) offsetHi(d time.Duration) {
	if w.prec == 0 || d < -w.prec || d >= w.prec {
		return
	}
	w.offsetInit()
	if d < w.offHi {
		w.offHi = d
	}
	if w.offLo > w.offHi {
		w.offLo, w.offHi = -w.prec, d
	}
}
