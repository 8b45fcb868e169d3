package plot

import (
	"image/color"
	"math"
	"strconv"
	"strings"
)

// The layout turns a Chart into a scene: positioned boxes, segments and
// labels in pixels, with y growing downwards. The SVG writer and the
// rasterizer draw the same scene.

type pt struct{ x, y float64 }

type box struct{ x0, y0, x1, y1 float64 }

type segment struct {
	a, b  pt
	width float64
	col   color.RGBA
}

// Text anchors of a label.
const (
	anchorStart = iota
	anchorMiddle
	anchorEnd
)

// label is a line of text. (x, y) is the anchor point on the text's
// baseline, before rotation; a vertical label is rotated 90° counter-
// clockwise about that point (it reads bottom to top).
type label struct {
	text     string
	x, y     float64
	scale    int
	anchor   int
	vertical bool
	col      color.RGBA
	class    string
}

type shape struct {
	name    string
	col     color.RGBA
	path    []pt // line series
	markers []pt
	radius  float64
	width   float64
	bars    []box // bar series
}

type legendEntry struct {
	name   string
	col    color.RGBA
	bar    bool
	swatch box // bar: the filled square; line: the line's extent (y0 == y1)
	marker pt
	text   label
}

type scene struct {
	w, h    int
	plot    box
	grid    []segment
	axes    []segment
	ticks   []label
	title   *label
	xLabel  *label
	yLabel  *label
	series  []shape
	legend  []legendEntry
	scale   int
	radius  float64
	lineW   float64
	textCol color.RGBA
}

// Glyph metrics of the built-in font, in font pixels: a glyph is 5 wide and
// 8 tall (7 above the baseline, 1 below); the advance is 6.
const (
	glyphW     = 5
	glyphH     = 8
	glyphAbove = 7
	advance    = 6
	lineH      = 9
)

// textWidth is the width in pixels of s at scale.
func textWidth(s string, scale int) float64 {
	n := len([]rune(s))
	if n == 0 {
		return 0
	}
	return float64((n*advance - 1) * scale)
}

// fit shortens s with a trailing "~" until it is at most width pixels wide.
func fit(s string, scale int, width float64) string {
	r := []rune(s)
	if textWidth(s, scale) <= width {
		return s
	}
	for len(r) > 1 {
		r = r[:len(r)-1]
		if t := string(r) + "~"; textWidth(t, scale) <= width {
			return t
		}
	}
	return ""
}

// Colors (RGB) of the grid, and of axes and text.
const (
	gridHex = 0xe4e4e4
	axisHex = 0x333333
)

func hexColor(v uint32) color.RGBA {
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
}

// scaleFn maps a data value to a pixel coordinate.
type scaleFn func(v float64) float64

// axisScale is the range and ticks of a numeric axis.
type axisScale struct {
	lo, hi float64
	log    bool
	ticks  []float64
}

func (a axisScale) mapper(p0, p1 float64) scaleFn {
	if a.log {
		l0, l1 := math.Log(a.lo), math.Log(a.hi)
		return func(v float64) float64 { return p0 + (math.Log(v)-l0)/(l1-l0)*(p1-p0) }
	}
	return func(v float64) float64 { return p0 + (v-a.lo)/(a.hi-a.lo)*(p1-p0) }
}

// layout validates c and places everything.
func (c *Chart) layout() (*scene, error) {
	w, h, err := c.validate()
	if err != nil {
		return nil, err
	}
	s := 1
	if min(w, h) >= 480 {
		s = 2
	}
	sc := &scene{w: w, h: h, scale: s, radius: 2.5 * float64(s), lineW: 1.5 * float64(s), textCol: hexColor(axisHex)}
	fs := float64(s)
	pad := 10 * fs
	gap := 6 * fs
	tickLen := 4 * fs

	// Ranges.
	var ys []float64
	for _, se := range c.Series {
		ys = append(ys, se.Y...)
	}
	yAxis := numericAxis(c.Y, ys, c.Kind == Bar || !c.Y.Log)
	var xAxis axisScale
	if c.Kind == Line {
		var xs []float64
		for _, se := range c.Series {
			xs = append(xs, se.X...)
		}
		xAxis = numericAxis(c.X, xs, false)
	}

	// Margins.
	yTickW := 0.0
	for _, t := range yAxis.ticks {
		yTickW = max(yTickW, textWidth(formatTick(t), s))
	}
	left := pad + yTickW + gap + tickLen
	if c.Y.Label != "" {
		left += glyphH*fs + gap
	}
	titleScale := s + 1
	if textWidth(c.Title, titleScale) > float64(w)-2*pad {
		titleScale = s
	}
	top := pad
	if c.Title != "" {
		top += lineH*float64(titleScale) + gap
	} else {
		top += glyphAbove * fs / 2 // room for the top tick label
	}
	bottom := pad + tickLen + gap + glyphH*fs
	if c.X.Label != "" {
		bottom += lineH*fs + gap
	}
	// The legend: entries flowing left to right in centered rows at the
	// bottom, so the plot keeps the full width.
	swatchW := 18 * fs
	legendRowH := lineH * fs * 1.4
	type slot struct {
		name string
		x    float64 // from the row's left end
		row  int
	}
	var slots []slot
	var rowW []float64
	for _, se := range c.Series {
		name := fit(se.Name, s, float64(w)-2*pad-swatchW-gap)
		ew := swatchW + gap + textWidth(name, s)
		if len(rowW) == 0 || rowW[len(rowW)-1]+3*gap+ew > float64(w)-2*pad {
			rowW = append(rowW, -3*gap)
		}
		r := len(rowW) - 1
		rowW[r] += 3 * gap
		slots = append(slots, slot{name, rowW[r], r})
		rowW[r] += ew
	}
	bottom += float64(len(rowW))*legendRowH + gap
	legendTop := float64(h) - pad - float64(len(rowW))*legendRowH
	// A right-most x tick label may stick out past the plot area.
	right := pad + textWidth(formatTick(xAxis.hi), s)/2
	sc.plot = box{left, top, float64(w) - right, float64(h) - bottom}
	if sc.plot.x1-sc.plot.x0 < 20*fs || sc.plot.y1-sc.plot.y0 < 20*fs {
		return nil, invalid("%dx%d is too small for its labels", w, h)
	}
	p := sc.plot
	ymap := yAxis.mapper(p.y1, p.y0)

	// Title and axis titles.
	if c.Title != "" {
		t := fit(c.Title, titleScale, float64(w)-2*pad)
		sc.title = &label{text: t, x: float64(w) / 2, y: pad + glyphAbove*float64(titleScale), scale: titleScale, anchor: anchorMiddle, col: hexColor(axisHex), class: "title"}
	}
	if c.X.Label != "" {
		sc.xLabel = &label{text: fit(c.X.Label, s, p.x1-p.x0), x: (p.x0 + p.x1) / 2, y: legendTop - gap - (glyphH-glyphAbove)*fs,
			scale: s, anchor: anchorMiddle, col: hexColor(axisHex), class: "axis-label x"}
	}
	if c.Y.Label != "" {
		sc.yLabel = &label{text: fit(c.Y.Label, s, p.y1-p.y0), x: pad + glyphAbove*fs, y: (p.y0 + p.y1) / 2,
			scale: s, anchor: anchorMiddle, vertical: true, col: hexColor(axisHex), class: "axis-label y"}
	}

	// Y ticks and grid.
	for _, t := range yAxis.ticks {
		y := ymap(t)
		sc.grid = append(sc.grid, segment{pt{p.x0, y}, pt{p.x1, y}, fs / 2, hexColor(gridHex)})
		sc.axes = append(sc.axes, segment{pt{p.x0 - tickLen, y}, pt{p.x0, y}, fs / 2, hexColor(axisHex)})
		sc.ticks = append(sc.ticks, label{text: formatTick(t), x: p.x0 - tickLen - gap, y: y + glyphAbove*fs/2,
			scale: s, anchor: anchorEnd, col: hexColor(axisHex), class: "tick y"})
	}
	tickY := p.y1 + tickLen + gap + glyphAbove*fs

	// X ticks, grid and series.
	if c.Kind == Line {
		xmap := xAxis.mapper(p.x0, p.x1)
		for _, t := range xAxis.ticks {
			x := xmap(t)
			sc.grid = append(sc.grid, segment{pt{x, p.y0}, pt{x, p.y1}, fs / 2, hexColor(gridHex)})
			sc.axes = append(sc.axes, segment{pt{x, p.y1}, pt{x, p.y1 + tickLen}, fs / 2, hexColor(axisHex)})
			sc.ticks = append(sc.ticks, label{text: formatTick(t), x: x, y: tickY, scale: s, anchor: anchorMiddle, col: hexColor(axisHex), class: "tick x"})
		}
		for i, se := range c.Series {
			sh := shape{name: se.Name, col: seriesColor(se, i), radius: sc.radius, width: sc.lineW}
			for j := range se.Y {
				q := pt{xmap(se.X[j]), ymap(se.Y[j])}
				sh.path = append(sh.path, q)
				sh.markers = append(sh.markers, q)
			}
			sc.series = append(sc.series, sh)
		}
	} else {
		band := (p.x1 - p.x0) / float64(len(c.Categories))
		base := ymap(max(yAxis.lo, min(0, yAxis.hi)))
		if yAxis.log {
			base = p.y1
		}
		inner := band * 0.8 / float64(len(c.Series))
		for k, name := range c.Categories {
			x := p.x0 + band*(float64(k)+0.5)
			sc.axes = append(sc.axes, segment{pt{x, p.y1}, pt{x, p.y1 + tickLen}, fs / 2, hexColor(axisHex)})
			sc.ticks = append(sc.ticks, label{text: fit(name, s, band-fs), x: x, y: tickY, scale: s, anchor: anchorMiddle, col: hexColor(axisHex), class: "tick x"})
		}
		for i, se := range c.Series {
			sh := shape{name: se.Name, col: seriesColor(se, i)}
			for k, v := range se.Y {
				x0 := p.x0 + band*float64(k) + band*0.1 + inner*float64(i)
				y := ymap(clamp(v, yAxis.lo, yAxis.hi))
				sh.bars = append(sh.bars, box{x0, min(y, base), x0 + inner, max(y, base)})
			}
			sc.series = append(sc.series, sh)
		}
	}
	sc.axes = append(sc.axes, segment{pt{p.x0, p.y0}, pt{p.x0, p.y1}, fs, hexColor(axisHex)}, segment{pt{p.x0, p.y1}, pt{p.x1, p.y1}, fs, hexColor(axisHex)})

	for i, sh := range sc.series {
		sl := slots[i]
		lx := (float64(w)-rowW[sl.row])/2 + sl.x
		y := legendTop + float64(sl.row)*legendRowH + glyphAbove*fs
		mid := y - glyphAbove*fs/2
		e := legendEntry{name: sh.name, col: sh.col, bar: c.Kind == Bar,
			text: label{text: sl.name, x: lx + swatchW + gap, y: y, scale: s, col: hexColor(axisHex), class: "legend"}}
		if e.bar {
			e.swatch = box{lx + swatchW/2 - 4*fs, mid - 4*fs, lx + swatchW/2 + 4*fs, mid + 4*fs}
		} else {
			e.swatch = box{lx, mid, lx + swatchW, mid}
			e.marker = pt{lx + swatchW/2, mid}
		}
		sc.legend = append(sc.legend, e)
	}
	return sc, nil
}

func seriesColor(s Series, i int) color.RGBA {
	if s.Color == (color.RGBA{}) {
		return SeriesColor(i)
	}
	return s.Color
}

func clamp(v, lo, hi float64) float64 { return max(lo, min(hi, v)) }

// numericAxis picks the range and ticks of an axis for values vs (all
// finite, > 0 on a log axis); withZero includes 0 on a linear axis when all
// values are >= 0.
func numericAxis(a Axis, vs []float64, withZero bool) axisScale {
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

// formatTick renders a tick value compactly: 0.25, 16, 1024, 15k, 2.5M.
func formatTick(v float64) string {
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case a >= 1e9:
		return trimFloat(v/1e9) + "G"
	case a >= 1e6:
		return trimFloat(v/1e6) + "M"
	case a >= 1e4:
		return trimFloat(v/1e3) + "k"
	case a >= 1e-3:
		return trimFloat(v)
	default:
		return strconv.FormatFloat(v, 'e', 1, 64)
	}
}

func trimFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', 3, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
