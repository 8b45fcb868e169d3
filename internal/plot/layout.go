package plot

import (
	"image/color"
	"math"
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
	size     float64 // font size in pixels
	bold     bool
	width    float64 // the text's advance width at size, as measured
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
	bars    []box     // bar series
	errs    []segment // error bars with their caps
	values  []label   // values on bars, "n/a" for a missing one
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
	radius  float64
	lineW   float64
	textCol color.RGBA
	faces   *faces
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

// axisScale is the range and ticks of an axis, and how its ticks are
// written (one format for all of them).
type axisScale struct {
	lo, hi float64
	log    bool
	ticks  []float64
	format func(float64) string
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
	k := 1.0
	if min(w, h) >= 480 {
		k = 1.5
	}
	ff := newFaces()
	sc := &scene{w: w, h: h, radius: 2.5 * k, lineW: 1.5 * k, textCol: hexColor(axisHex), faces: ff}
	text := 12 * k // ticks, legend, axis titles
	titleSize := 15 * k
	capH := ff.capHeight(text)
	lineH := text * 1.25
	pad := 10 * k
	gap := 6 * k
	tickLen := 4 * k
	mk := func(s string, x, y float64, anchor int, class string) label {
		return label{text: s, x: x, y: y, size: text, width: ff.width(s, text, false), anchor: anchor, col: hexColor(axisHex), class: class}
	}

	// Ranges.
	var ys []float64
	for _, se := range c.Series {
		for j, y := range se.Y {
			if math.IsNaN(y) {
				continue // a bar without data
			}
			ys = append(ys, y)
			if j < len(se.Err) && se.Err[j] > 0 {
				ys = append(ys, y+se.Err[j])
				if lo := y - se.Err[j]; !c.Y.Log || lo > 0 {
					ys = append(ys, lo)
				}
			}
		}
	}
	yAxis := numericAxis(c.Y, ys, c.Kind == Bar || !c.Y.Log)
	var xAxis axisScale
	if c.Kind == Line {
		var xs []float64
		for _, se := range c.Series {
			xs = append(xs, se.X...)
		}
		if c.X.Time {
			xAxis = timeAxis(c.X, xs)
		} else {
			xAxis = numericAxis(c.X, xs, false)
		}
	}

	// Margins.
	yTickW := 0.0
	for _, t := range yAxis.ticks {
		yTickW = max(yTickW, ff.width(yAxis.format(t), text, false))
	}
	left := pad + yTickW + gap + tickLen
	if c.Y.Label != "" {
		left += lineH + gap
	}
	if ff.width(c.Title, titleSize, true) > float64(w)-2*pad {
		titleSize = text
	}
	top := pad
	if c.Title != "" {
		top += titleSize*1.2 + gap
	} else {
		top += capH / 2 // room for the top tick label
	}
	if c.Kind == Bar && c.Values {
		top += lineH // room for the values over the tallest bars
	}
	bottom := pad + tickLen + gap + lineH
	if c.X.Label != "" {
		bottom += lineH + gap
	}
	// The legend: entries flowing left to right in centered rows at the
	// bottom, so the plot keeps the full width.
	swatchW := 18 * k
	legendRowH := lineH * 1.2
	type slot struct {
		name string
		x    float64 // from the row's left end
		row  int
	}
	var slots []slot
	var rowW []float64
	for _, se := range c.Series {
		name := ff.fit(se.Name, text, false, float64(w)-2*pad-swatchW-gap)
		ew := swatchW + gap + ff.width(name, text, false)
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
	right := pad
	if c.Kind == Line && len(xAxis.ticks) > 0 {
		right += ff.width(xAxis.format(xAxis.ticks[len(xAxis.ticks)-1]), text, false) / 2
	}
	sc.plot = box{left, top, float64(w) - right, float64(h) - bottom}
	if sc.plot.x1-sc.plot.x0 < 20*k || sc.plot.y1-sc.plot.y0 < 20*k {
		return nil, invalid("%dx%d is too small for its labels", w, h)
	}
	p := sc.plot
	ymap := yAxis.mapper(p.y1, p.y0)

	// Title and axis titles.
	if c.Title != "" {
		t := ff.fit(c.Title, titleSize, true, float64(w)-2*pad)
		sc.title = &label{text: t, x: float64(w) / 2, y: pad + ff.capHeight(titleSize), size: titleSize, bold: true,
			width: ff.width(t, titleSize, true), anchor: anchorMiddle, col: hexColor(axisHex), class: "title"}
	}
	if c.X.Label != "" {
		l := mk(ff.fit(c.X.Label, text, false, p.x1-p.x0), (p.x0+p.x1)/2, legendTop-gap-ff.descent(text), anchorMiddle, "axis-label x")
		sc.xLabel = &l
	}
	if c.Y.Label != "" {
		l := mk(ff.fit(c.Y.Label, text, false, p.y1-p.y0), pad+capH, (p.y0+p.y1)/2, anchorMiddle, "axis-label y")
		l.vertical = true
		sc.yLabel = &l
	}

	// Y ticks and grid.
	for _, t := range yAxis.ticks {
		y := ymap(t)
		sc.grid = append(sc.grid, segment{pt{p.x0, y}, pt{p.x1, y}, k / 2, hexColor(gridHex)})
		sc.axes = append(sc.axes, segment{pt{p.x0 - tickLen, y}, pt{p.x0, y}, k / 2, hexColor(axisHex)})
		sc.ticks = append(sc.ticks, mk(yAxis.format(t), p.x0-tickLen-gap, y+capH/2, anchorEnd, "tick y"))
	}
	tickY := p.y1 + tickLen + gap + capH
	capW := 4 * k // half the width of an error bar's caps
	errBar := func(x, lo, hi float64, col color.RGBA) []segment {
		return []segment{{pt{x, lo}, pt{x, hi}, k, col}, {pt{x - capW, lo}, pt{x + capW, lo}, k, col}, {pt{x - capW, hi}, pt{x + capW, hi}, k, col}}
	}
	errOf := func(se Series, j int) float64 {
		if j < len(se.Err) {
			return se.Err[j]
		}
		return 0
	}
	errTop := hexColor(axisHex) // error bars over bars: dark on any fill

	// X ticks and grid, and the series.
	if c.Kind == Line {
		xmap := xAxis.mapper(p.x0, p.x1)
		for _, t := range xAxis.ticks {
			x := xmap(t)
			sc.grid = append(sc.grid, segment{pt{x, p.y0}, pt{x, p.y1}, k / 2, hexColor(gridHex)})
			sc.axes = append(sc.axes, segment{pt{x, p.y1}, pt{x, p.y1 + tickLen}, k / 2, hexColor(axisHex)})
			sc.ticks = append(sc.ticks, mk(xAxis.format(t), x, tickY, anchorMiddle, "tick x"))
		}
		for i, se := range c.Series {
			sh := shape{name: se.Name, col: seriesColor(se, i), radius: sc.radius, width: sc.lineW}
			for j := range se.Y {
				q := pt{xmap(se.X[j]), ymap(se.Y[j])}
				sh.path = append(sh.path, q)
				if len(se.Y) <= maxMarked {
					sh.markers = append(sh.markers, q)
				}
				if e := errOf(se, j); e > 0 {
					lo := se.Y[j] - e
					if c.Y.Log && lo <= 0 {
						lo = yAxis.lo
					}
					sh.errs = append(sh.errs, errBar(q.x, ymap(clamp(lo, yAxis.lo, yAxis.hi)), ymap(clamp(se.Y[j]+e, yAxis.lo, yAxis.hi)), sh.col)...)
				}
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
		for j, name := range c.Categories {
			x := p.x0 + band*(float64(j)+0.5)
			sc.axes = append(sc.axes, segment{pt{x, p.y1}, pt{x, p.y1 + tickLen}, k / 2, hexColor(axisHex)})
			sc.ticks = append(sc.ticks, mk(ff.fit(name, text, false, band-k), x, tickY, anchorMiddle, "tick x"))
		}
		valueSize := text * 0.9
		for i, se := range c.Series {
			sh := shape{name: se.Name, col: seriesColor(se, i)}
			for j, v := range se.Y {
				x0 := p.x0 + band*float64(j) + band*0.1 + inner*float64(i)
				mid := x0 + inner/2
				if math.IsNaN(v) {
					l := label{text: "n/a", x: mid, y: base - gap, size: valueSize, width: ff.width("n/a", valueSize, false),
						anchor: anchorMiddle, col: hexColor(axisHex), class: "value missing"}
					sh.values = append(sh.values, l)
					continue
				}
				y := ymap(clamp(v, yAxis.lo, yAxis.hi))
				sh.bars = append(sh.bars, box{x0, min(y, base), x0 + inner, max(y, base)})
				topY := min(y, base)
				if e := errOf(se, j); e > 0 {
					hi := ymap(clamp(v+e, yAxis.lo, yAxis.hi))
					sh.errs = append(sh.errs, errBar(mid, ymap(clamp(v-e, yAxis.lo, yAxis.hi)), hi, errTop)...)
					topY = min(topY, hi)
				}
				if c.Values {
					s := c.valueText(v, yAxis)
					if j < len(se.Labels) && se.Labels[j] != "" {
						s = se.Labels[j]
					}
					sh.values = append(sh.values, label{text: s, x: mid, y: topY - gap/2, size: valueSize, width: ff.width(s, valueSize, false),
						anchor: anchorMiddle, col: hexColor(axisHex), class: "value"})
				}
			}
			sc.series = append(sc.series, sh)
		}
	}
	sc.axes = append(sc.axes, segment{pt{p.x0, p.y0}, pt{p.x0, p.y1}, k, hexColor(axisHex)}, segment{pt{p.x0, p.y1}, pt{p.x1, p.y1}, k, hexColor(axisHex)})

	for i, sh := range sc.series {
		sl := slots[i]
		lx := (float64(w)-rowW[sl.row])/2 + sl.x
		y := legendTop + float64(sl.row)*legendRowH + capH
		mid := y - capH/2
		e := legendEntry{name: sh.name, col: sh.col, bar: c.Kind == Bar, text: mk(sl.name, lx+swatchW+gap, y, anchorStart, "legend")}
		if e.bar {
			e.swatch = box{lx + swatchW/2 - 4*k, mid - 4*k, lx + swatchW/2 + 4*k, mid + 4*k}
		} else {
			e.swatch = box{lx, mid, lx + swatchW, mid}
			e.marker = pt{lx + swatchW/2, mid}
		}
		sc.legend = append(sc.legend, e)
	}
	return sc, nil
}

// maxMarked is the most points a line series has markers at: a denser
// series (a time series of samples) is a line.
const maxMarked = 60

// valueText writes a bar's value: with ValueFormat, else as the Y axis
// writes its ticks with up to two more digits.
func (c *Chart) valueText(v float64, a axisScale) string {
	if c.ValueFormat != nil {
		return c.ValueFormat(v)
	}
	return formatValue(v, a)
}

func seriesColor(s Series, i int) color.RGBA {
	if s.Color == (color.RGBA{}) {
		return SeriesColor(i)
	}
	return s.Color
}

func clamp(v, lo, hi float64) float64 { return max(lo, min(hi, v)) }
