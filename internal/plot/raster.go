package plot

import (
	"image"
	"image/color"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/math/fixed"
)

// canvas rasterizes a scene: anti-aliased lines, discs and boxes by
// coverage, and anti-aliased text from the Go fonts.
type canvas struct {
	img *image.RGBA
	f   *faces
}

func rasterize(sc *scene) *image.RGBA {
	f := sc.faces
	if f == nil {
		f = newFaces()
	}
	c := &canvas{img: image.NewRGBA(image.Rect(0, 0, sc.w, sc.h)), f: f}
	bg := Background()
	for i := 0; i < len(c.img.Pix); i += 4 {
		c.img.Pix[i], c.img.Pix[i+1], c.img.Pix[i+2], c.img.Pix[i+3] = bg.R, bg.G, bg.B, 0xff
	}
	for _, s := range sc.grid {
		c.stroke([]pt{s.a, s.b}, s.width, s.col)
	}
	for _, sh := range sc.series {
		for _, r := range sh.bars {
			c.fill(r, sh.col)
		}
		if len(sh.path) > 0 {
			c.stroke(sh.path, sh.width, sh.col)
			for _, m := range sh.markers {
				c.disc(m, sh.radius, sh.col)
			}
		}
		for _, e := range sh.errs {
			c.stroke([]pt{e.a, e.b}, e.width, e.col)
		}
		for _, v := range sh.values {
			c.text(v)
		}
	}
	for _, s := range sc.axes {
		c.stroke([]pt{s.a, s.b}, s.width, s.col)
	}
	for _, l := range sc.ticks {
		c.text(l)
	}
	for _, l := range []*label{sc.title, sc.xLabel, sc.yLabel} {
		if l != nil {
			c.text(*l)
		}
	}
	for _, e := range sc.legend {
		if e.bar {
			c.fill(e.swatch, e.col)
		} else {
			c.stroke([]pt{{e.swatch.x0, e.swatch.y0}, {e.swatch.x1, e.swatch.y1}}, sc.lineW, e.col)
			c.disc(e.marker, sc.radius, e.col)
		}
		c.text(e.text)
	}
	return c.img
}

// blend paints col over pixel (x, y) with coverage cov in [0, 1].
func (c *canvas) blend(x, y int, col color.RGBA, cov float64) {
	if cov <= 0 || !(image.Point{x, y}.In(c.img.Rect)) {
		return
	}
	a := min(cov, 1) * float64(col.A) / 255
	i := c.img.PixOffset(x, y)
	p := c.img.Pix[i : i+3 : i+3]
	p[0] = uint8(float64(p[0])*(1-a) + float64(col.R)*a + 0.5)
	p[1] = uint8(float64(p[1])*(1-a) + float64(col.G)*a + 0.5)
	p[2] = uint8(float64(p[2])*(1-a) + float64(col.B)*a + 0.5)
}

// bounds clips the pixel range [x0, x1) × [y0, y1) to the image.
func (c *canvas) bounds(x0, y0, x1, y1 float64) (int, int, int, int) {
	r := c.img.Rect
	clampI := func(v float64, lo, hi int) int {
		if math.IsNaN(v) {
			return lo
		}
		return max(lo, min(hi, int(v)))
	}
	return clampI(math.Floor(x0), r.Min.X, r.Max.X), clampI(math.Floor(y0), r.Min.Y, r.Max.Y),
		clampI(math.Ceil(x1), r.Min.X, r.Max.X), clampI(math.Ceil(y1), r.Min.Y, r.Max.Y)
}

// fill paints box b; partly covered edge pixels get their covered area.
func (c *canvas) fill(b box, col color.RGBA) {
	x0, y0, x1, y1 := c.bounds(b.x0, b.y0, b.x1, b.y1)
	for y := y0; y < y1; y++ {
		cy := math.Min(float64(y+1), b.y1) - math.Max(float64(y), b.y0)
		for x := x0; x < x1; x++ {
			cx := math.Min(float64(x+1), b.x1) - math.Max(float64(x), b.x0)
			c.blend(x, y, col, cx*cy)
		}
	}
}

// stroke paints a polyline of the given width with round joins and caps.
// Each pixel takes the largest coverage of any segment, so joints are not
// painted twice.
func (c *canvas) stroke(path []pt, width float64, col color.RGBA) {
	if len(path) == 0 {
		return
	}
	hw := width / 2
	lo, hi := path[0], path[0]
	for _, q := range path {
		lo.x, lo.y = min(lo.x, q.x), min(lo.y, q.y)
		hi.x, hi.y = max(hi.x, q.x), max(hi.y, q.y)
	}
	x0, y0, x1, y1 := c.bounds(lo.x-hw-1, lo.y-hw-1, hi.x+hw+1, hi.y+hw+1)
	w, h := x1-x0, y1-y0
	if w <= 0 || h <= 0 {
		return
	}
	cov := make([]float32, w*h)
	seg := func(a, b pt) {
		sx0, sy0, sx1, sy1 := c.bounds(min(a.x, b.x)-hw-1, min(a.y, b.y)-hw-1, max(a.x, b.x)+hw+1, max(a.y, b.y)+hw+1)
		for y := sy0; y < sy1; y++ {
			for x := sx0; x < sx1; x++ {
				d := distToSegment(pt{float64(x) + 0.5, float64(y) + 0.5}, a, b)
				v := float32(clamp(hw+0.5-d, 0, 1))
				if i := (y-y0)*w + (x - x0); v > cov[i] {
					cov[i] = v
				}
			}
		}
	}
	if len(path) == 1 {
		seg(path[0], path[0])
	}
	for i := 1; i < len(path); i++ {
		seg(path[i-1], path[i])
	}
	for y := range h {
		for x := range w {
			if v := cov[y*w+x]; v > 0 {
				c.blend(x0+x, y0+y, col, float64(v))
			}
		}
	}
}

func distToSegment(p, a, b pt) float64 {
	dx, dy := b.x-a.x, b.y-a.y
	t := 0.0
	if l := dx*dx + dy*dy; l > 0 {
		t = clamp(((p.x-a.x)*dx+(p.y-a.y)*dy)/l, 0, 1)
	}
	return math.Hypot(p.x-(a.x+t*dx), p.y-(a.y+t*dy))
}

// disc paints a filled circle.
func (c *canvas) disc(ctr pt, r float64, col color.RGBA) {
	x0, y0, x1, y1 := c.bounds(ctr.x-r-1, ctr.y-r-1, ctr.x+r+1, ctr.y+r+1)
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			d := math.Hypot(float64(x)+0.5-ctr.x, float64(y)+0.5-ctr.y)
			c.blend(x, y, col, clamp(r+0.5-d, 0, 1))
		}
	}
}

// text draws a label: anti-aliased glyphs of the Go font; a vertical
// label is drawn level into a scratch image and turned 90° counter-
// clockwise about its anchor.
func (c *canvas) text(l label) {
	if l.text == "" {
		return
	}
	face := c.f.face(l.size, l.bold)
	start := 0.0
	switch l.anchor {
	case anchorMiddle:
		start = -l.width / 2
	case anchorEnd:
		start = -l.width
	}
	m := face.Metrics()
	asc, desc := math.Ceil(fix(m.Ascent))+1, math.Ceil(fix(m.Descent))+1
	w := int(math.Ceil(l.width)) + 2
	h := int(asc + desc)
	mask := image.NewAlpha(image.Rect(0, 0, w, h))
	d := font.Drawer{Dst: mask, Src: image.Opaque, Face: face, Dot: fixed.Point26_6{X: fixed.I(1), Y: fixed.I(int(asc))}}
	d.DrawString(l.text)
	// The mask's origin in the chart: its baseline point is (1, asc).
	for y := range h {
		for x := range w {
			a := mask.AlphaAt(x, y).A
			if a == 0 {
				continue
			}
			u := start + float64(x-1) // along the text from the anchor
			v := float64(y) - asc     // down from the baseline
			var px, py float64
			if l.vertical {
				px, py = l.x+v, l.y-u
			} else {
				px, py = l.x+u, l.y+v
			}
			c.blend(int(math.Floor(px)), int(math.Floor(py)), l.col, float64(a)/255)
		}
	}
}
