package plot

import (
	"math"
	"strconv"
	"strings"
)

// Axis ranges, their ticks and how the ticks are written.

// numericAxis picks the range and ticks of an axis for values vs (all
// finite, > 0 on a log axis); withZero includes 0 on a linear axis when all
// values are >= 0.
func numericAxis(a Axis, vs []float64, withZero bool) axisScale {
	r := numericRange(a, vs, withZero)
	r.format = tickFormat(r.ticks, r.log)
	return r
}

func numericRange(a Axis, vs []float64, withZero bool) axisScale {
	if a.Max > a.Min {
		r := axisScale{lo: a.Min, hi: a.Max, log: a.Log}
		if a.Log {
			_, _, r.ticks = logTicks(a.Min, a.Max, powersOfTwo([]float64{a.Min, a.Max}))
			r.ticks = within(r.ticks, a.Min, a.Max)
		} else {
			_, _, r.ticks = linearTicks(a.Min, a.Max)
			r.ticks = within(r.ticks, a.Min, a.Max)
		}
		return r
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	if len(vs) == 0 {
		lo, hi = 0, 1
	}
	r := axisScale{log: a.Log}
	if a.Log {
		r.lo, r.hi, r.ticks = logTicks(lo, hi, powersOfTwo(vs))
		return r
	}
	if withZero && lo >= 0 {
		lo = 0
	}
	r.lo, r.hi, r.ticks = linearTicks(lo, hi)
	return r
}

func within(ts []float64, lo, hi float64) []float64 {
	var out []float64
	eps := (hi - lo) * 1e-9
	for _, t := range ts {
		if t >= lo-eps && t <= hi+eps {
			out = append(out, t)
		}
	}
	return out
}

// niceNum returns a "nice" number near x: 1, 2, 5 or 10 times a power of
// ten; rounded picks the nearest, otherwise the next one up.
func niceNum(x float64, rounded bool) float64 {
	e := math.Floor(math.Log10(x))
	f := x / math.Pow(10, e)
	var n float64
	switch {
	case rounded && f < 1.5, !rounded && f <= 1:
		n = 1
	case rounded && f < 3, !rounded && f <= 2:
		n = 2
	case rounded && f < 7, !rounded && f <= 5:
		n = 5
	default:
		n = 10
	}
	return n * math.Pow(10, e)
}

// linearTicks widens [lo, hi] to round ticks, about six of them.
func linearTicks(lo, hi float64) (float64, float64, []float64) {
	if !(hi-lo > math.Abs(hi)*1e-12) { // one value: widen around it
		d := math.Abs(hi) * 0.1
		if d == 0 {
			d = 1
		}
		if lo >= 0 && lo-d < 0 {
			lo = 0
		} else {
			lo -= d
		}
		hi += d
	}
	step := niceNum(niceNum(hi-lo, false)/5, true)
	nlo, nhi := math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	var ts []float64
	for i := 0; ; i++ {
		t := nlo + float64(i)*step
		if t > nhi+step*1e-9 || i > 1000 {
			break
		}
		if math.Abs(t) < step*1e-9 {
			t = 0
		}
		ts = append(ts, t)
	}
	return nlo, nhi, ts
}

// logTicks widens [lo, hi] (both > 0) to round ticks, at most about 10:
// whole powers of 2 when pow2 (the data are powers of two, like agent
// counts) and they span at most 12 doublings; else 1, 2 and 5 times powers
// of 10 over at most three decades, or powers of 10.
func logTicks(lo, hi float64, pow2 bool) (float64, float64, []float64) {
	if pow2 && math.Log2(hi/lo) <= 12 {
		return powerTicks(lo, hi, 2)
	}
	if hi/lo > 1000 {
		return powerTicks(lo, hi, 10)
	}
	var cands []float64
	for k := math.Floor(math.Log10(lo)) - 1; k <= math.Ceil(math.Log10(hi))+1; k++ {
		for _, m := range []float64{1, 2, 5} {
			cands = append(cands, m*math.Pow(10, k))
		}
	}
	const tol = 1e-9
	first, last := 0, len(cands)-1
	for i, c := range cands {
		if c <= lo*(1+tol) {
			first = i // the largest candidate at or below lo
		}
	}
	for i := len(cands) - 1; i >= 0; i-- {
		if cands[i] >= hi*(1-tol) {
			last = i // the smallest candidate at or above hi
		}
	}
	if last <= first {
		last = first + 1
	}
	ts := cands[first : last+1]
	return ts[0], ts[len(ts)-1], ts
}

// powerTicks widens [lo, hi] to whole powers of base, with at most about
// 10 ticks.
func powerTicks(lo, hi, base float64) (float64, float64, []float64) {
	logb := func(v float64) float64 { return math.Log(v) / math.Log(base) }
	k0 := math.Floor(logb(lo) + 1e-9)
	k1 := math.Ceil(logb(hi) - 1e-9)
	if k1 <= k0 {
		k1 = k0 + 1
	}
	every := math.Ceil((k1 - k0 + 1) / 10)
	var ts []float64
	for k := k0; k <= k1; k += every {
		ts = append(ts, math.Pow(base, k))
	}
	return math.Pow(base, k0), math.Pow(base, k1), ts
}

// powersOfTwo reports whether every value is a whole power of two.
func powersOfTwo(vs []float64) bool {
	for _, v := range vs {
		if e := math.Round(math.Log2(v)); math.Abs(v-math.Exp2(e)) > 1e-9*v {
			return false
		}
	}
	return len(vs) > 0
}

// unitOf is the suffix and divisor every tick of an axis is written
// with, chosen by the largest: one axis never mixes "10k" and "5000".
func unitOf(ticks []float64) (string, float64) {
	m := 0.0
	for _, t := range ticks {
		m = max(m, math.Abs(t))
	}
	switch {
	case m >= 1e9:
		return "G", 1e9
	case m >= 1e6:
		return "M", 1e6
	case m >= 1e4:
		return "k", 1e3
	}
	return "", 1
}

// decimals is how many decimals v needs (at most 6).
func decimals(v float64) int {
	for d := 0; d < 6; d++ {
		if p := math.Pow(10, float64(d)); math.Abs(v*p-math.Round(v*p)) < 1e-6*max(1, math.Abs(v*p)) {
			return d
		}
	}
	return 6
}

// tickFormat returns the one format of an axis's ticks: one unit suffix
// for all; on a linear axis as many decimals for all as the step needs
// ("0.0 0.5 1.0"), on a log axis as each needs ("0.1 1 10").
func tickFormat(ticks []float64, log bool) func(float64) string {
	suffix, div := unitOf(ticks)
	m := 0.0
	for _, t := range ticks {
		m = max(m, math.Abs(t))
	}
	if m > 0 && m < 1e-3 { // the whole axis is tiny: scientific notation, alike
		return func(v float64) string {
			if v == 0 {
				return "0"
			}
			return strconv.FormatFloat(v, 'e', 1, 64)
		}
	}
	d := -1
	if !log && len(ticks) > 1 {
		d = 0
		for _, t := range ticks {
			d = max(d, decimals(t/div))
		}
	}
	return func(v float64) string {
		x := v / div
		dd := d
		if dd < 0 {
			dd = decimals(x)
		}
		s := strconv.FormatFloat(x, 'f', dd, 64)
		if strings.Trim(s, "-0.") == "" {
			s = "0"
		}
		if s == "0" {
			return s
		}
		return s + suffix
	}
}

// formatValue writes a value in its axis's unit with one more decimal
// than its ticks have, the same for every value of the chart.
func formatValue(v float64, a axisScale) string {
	suffix, div := unitOf(a.ticks)
	d := 0
	for _, t := range a.ticks {
		d = max(d, decimals(t/div))
	}
	return strconv.FormatFloat(v/div, 'f', min(d+1, 6), 64) + suffix
}
