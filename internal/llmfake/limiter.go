package llmfake

import (
	"math"
	"time"
)

// dim is one rate-limit dimension.
type dim int

const (
	dimRequests dim = iota
	dimInput
	dimOutput
	dimTotal
	numDims
)

func (d dim) String() string {
	switch d {
	case dimRequests:
		return "requests"
	case dimInput:
		return "input_tokens"
	case dimOutput:
		return "output_tokens"
	default:
		return "tokens"
	}
}

// rateView is the limiter's parameters at one instant.
type rateView struct {
	now    time.Time
	epoch  time.Time // window boundaries are epoch + k*window
	window time.Duration
	bucket bool
	limit  [numDims]int64 // 0 = unlimited
}

func newRateView(cfg *Config, epoch, now time.Time) rateView {
	return rateView{
		now:    now,
		epoch:  epoch,
		window: cfg.window(),
		bucket: cfg.Limits.Window == WindowBucket,
		limit:  [numDims]int64{cfg.Limits.RPM, cfg.Limits.ITPM, cfg.Limits.OTPM, cfg.Limits.TPM},
	}
}

// index is the number of the (observation) window holding v.now.
func (v *rateView) index() int64 {
	d := v.now.Sub(v.epoch)
	if d < 0 {
		return 0
	}
	return int64(d / v.window)
}

func (v *rateView) limited() bool {
	return v.limit != [numDims]int64{}
}

// meter is the usage of one dimension for one key. For fixed windows it
// counts what was charged in window idx; for buckets it holds the level
// (available capacity) at time last.
type meter struct {
	used  int64
	idx   int64
	level float64
	last  time.Time
	init  bool
}

// sync brings the meter to v.now: a new fixed window clears the count, a
// bucket refills.
func (m *meter) sync(v *rateView, limit int64) {
	if v.bucket {
		if !m.init {
			m.level, m.last, m.init = float64(limit), v.now, true
			return
		}
		if el := v.now.Sub(m.last); el > 0 {
			m.level += float64(limit) * float64(el) / float64(v.window)
			m.last = v.now
		}
		m.level = min(m.level, float64(limit))
		return
	}
	if idx := v.index(); !m.init || idx != m.idx {
		m.used, m.idx, m.init = 0, idx, true
	}
}

// remaining is what is left at v.now (after sync); it may be negative when
// output overshot.
func (m *meter) remaining(v *rateView, limit int64) float64 {
	if v.bucket {
		return m.level
	}
	return float64(limit - m.used)
}

func (m *meter) charge(v *rateView, n int64) {
	if v.bucket {
		m.level -= float64(n)
		return
	}
	m.used += n
}

// resetAt is when the dimension is fully replenished: the end of the fixed
// window, or when the bucket is full again.
func (m *meter) resetAt(v *rateView, limit int64) time.Time {
	if v.bucket {
		missing := float64(limit) - m.level
		if missing <= 0 {
			return v.now
		}
		return v.now.Add(time.Duration(math.Ceil(missing * float64(v.window) / float64(limit))))
	}
	return v.epoch.Add(time.Duration(m.idx+1) * v.window)
}

// waitFor is how long until need units are available (for a need larger
// than the limit: until full replenishment).
func (m *meter) waitFor(v *rateView, limit int64, need float64) time.Duration {
	rem := m.remaining(v, limit)
	if rem >= need {
		return 0
	}
	if v.bucket {
		need = min(need, float64(limit))
		return time.Duration(math.Ceil((need - m.level) * float64(v.window) / float64(limit)))
	}
	return m.resetAt(v, limit).Sub(v.now)
}

// windowCount is the traffic of one key in one observation window.
type windowCount struct {
	idx      int64
	valid    bool
	requests int64 // admitted
	rejected int64 // 429 by the rate limiter
	in, out  int64
}

// windowHistory keeps the most recent windows (by index) for /_stats.
const windowHistory = 256

// admitResult says why a request was not admitted.
type admitResult struct {
	ok   bool
	dim  dim           // the exhausted dimension when !ok
	wait time.Duration // until it could be admitted
}

// admit checks and charges one request with in input tokens.
func (k *keyState) admit(v *rateView, in int64) admitResult {
	if !v.limited() {
		k.window(v).requests++
		k.window(v).in += in
		return admitResult{ok: true}
	}
	need := [numDims]float64{1, float64(in), 1, float64(in)}
	res := admitResult{ok: true}
	for d := range numDims {
		lim := v.limit[d]
		if lim == 0 {
			continue
		}
		m := &k.meters[d]
		m.sync(v, lim)
		var fits bool
		if d == dimOutput {
			// Output is charged when generated; admission only needs
			// the budget not to be exhausted already.
			fits = m.remaining(v, lim) > 0
		} else {
			fits = m.remaining(v, lim) >= need[d] && need[d] <= float64(lim)
		}
		if !fits {
			w := m.waitFor(v, lim, need[d])
			if res.ok || w > res.wait {
				res.wait = w
			}
			if res.ok {
				res.dim = d
			}
			res.ok = false
		}
	}
	if !res.ok {
		k.window(v).rejected++
		return res
	}
	for d, n := range [numDims]int64{1, in, 0, in} {
		if v.limit[d] != 0 && n != 0 {
			k.meters[d].charge(v, n)
		}
	}
	w := k.window(v)
	w.requests++
	w.in += in
	return res
}

// chargeOutput charges generated output tokens.
func (k *keyState) chargeOutput(v *rateView, out int64) {
	for _, d := range []dim{dimOutput, dimTotal} {
		if lim := v.limit[d]; lim != 0 {
			k.meters[d].sync(v, lim)
			k.meters[d].charge(v, out)
		}
	}
	k.window(v).out += out
}

func (k *keyState) window(v *rateView) *windowCount {
	idx := v.index()
	w := &k.windows[idx%windowHistory]
	if !w.valid || w.idx != idx {
		*w = windowCount{idx: idx, valid: true}
	}
	return w
}

// LimitState is the current state of one rate-limit dimension of one key.
type LimitState struct {
	Limit     int64     `json:"limit"`
	Remaining int64     `json:"remaining"`
	Reset     time.Time `json:"reset"`
}

// limitStates reports every configured dimension at v.now.
func (k *keyState) limitStates(v *rateView) map[string]LimitState {
	if !v.limited() {
		return nil
	}
	out := make(map[string]LimitState, numDims)
	for d := range numDims {
		if lim := v.limit[d]; lim != 0 {
			out[d.String()] = k.state(v, d)
		}
	}
	return out
}

func (k *keyState) state(v *rateView, d dim) LimitState {
	lim := v.limit[d]
	m := &k.meters[d]
	m.sync(v, lim)
	rem := int64(math.Floor(m.remaining(v, lim)))
	return LimitState{Limit: lim, Remaining: max(rem, 0), Reset: m.resetAt(v, lim)}
}

// tokenDim is the token dimension reported as the combined "tokens" family:
// the total limit if set, otherwise the most restrictive of input and output.
func (k *keyState) tokenDim(v *rateView) (dim, bool) {
	if v.limit[dimTotal] != 0 {
		return dimTotal, true
	}
	best, found := dim(0), false
	var bestRem int64
	for _, d := range []dim{dimInput, dimOutput} {
		if v.limit[d] == 0 {
			continue
		}
		if st := k.state(v, d); !found || st.Remaining < bestRem {
			best, bestRem, found = d, st.Remaining, true
		}
	}
	return best, found
}
