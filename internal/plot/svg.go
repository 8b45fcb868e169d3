package plot

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"strconv"
	"strings"
)

// writeSVG renders sc as an SVG document; see the package doc for its
// structure.
func writeSVG(b *bytes.Buffer, sc *scene) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s">`+"\n",
		sc.w, sc.h, sc.w, sc.h, fontFamily)
	fmt.Fprintf(b, `<rect class="background" width="%d" height="%d" fill="%s"/>`+"\n", sc.w, sc.h, hex(Background()))
	b.WriteString(`<g class="grid">` + "\n")
	for _, s := range sc.grid {
		svgLine(b, s, "")
	}
	b.WriteString("</g>\n")
	p := sc.plot
	fmt.Fprintf(b, `<rect class="plot-area" x="%s" y="%s" width="%s" height="%s" fill="none"/>`+"\n", num(p.x0), num(p.y0), num(p.x1-p.x0), num(p.y1-p.y0))
	for _, sh := range sc.series {
		fmt.Fprintf(b, `<g class="series" data-name="%s">`+"\n", attr(sh.name))
		if len(sh.path) > 0 {
			var d strings.Builder
			for i, q := range sh.path {
				if i == 0 {
					d.WriteString("M")
				} else {
					d.WriteString(" L")
				}
				d.WriteString(num(q.x) + " " + num(q.y))
			}
			fmt.Fprintf(b, `<path class="series-line" d="%s" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round" stroke-linecap="round"/>`+"\n",
				d.String(), hex(sh.col), num(sh.width))
			for _, m := range sh.markers {
				fmt.Fprintf(b, `<circle class="marker" cx="%s" cy="%s" r="%s" fill="%s"/>`+"\n", num(m.x), num(m.y), num(sh.radius), hex(sh.col))
			}
		}
		for _, r := range sh.bars {
			fmt.Fprintf(b, `<rect class="bar" x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n", num(r.x0), num(r.y0), num(r.x1-r.x0), num(r.y1-r.y0), hex(sh.col))
		}
		for _, e := range sh.errs {
			svgLine(b, e, "error-bar")
		}
		for _, v := range sh.values {
			svgText(b, v)
		}
		b.WriteString("</g>\n")
	}
	b.WriteString(`<g class="axes">` + "\n")
	for _, s := range sc.axes {
		svgLine(b, s, "")
	}
	b.WriteString("</g>\n")
	for _, l := range sc.ticks {
		svgText(b, l)
	}
	for _, l := range []*label{sc.title, sc.xLabel, sc.yLabel} {
		if l != nil {
			svgText(b, *l)
		}
	}
	for _, e := range sc.legend {
		fmt.Fprintf(b, `<g class="legend-entry" data-name="%s">`+"\n", attr(e.name))
		if e.bar {
			r := e.swatch
			fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n", num(r.x0), num(r.y0), num(r.x1-r.x0), num(r.y1-r.y0), hex(e.col))
		} else {
			svgLine(b, segment{pt{e.swatch.x0, e.swatch.y0}, pt{e.swatch.x1, e.swatch.y1}, sc.lineW, e.col}, "")
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="%s" fill="%s"/>`+"\n", num(e.marker.x), num(e.marker.y), num(sc.radius), hex(e.col))
		}
		svgText(b, e.text)
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
}

func svgLine(b *bytes.Buffer, s segment, class string) {
	c := ""
	if class != "" {
		c = ` class="` + class + `"`
	}
	fmt.Fprintf(b, `<line%s x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"/>`+"\n",
		c, num(s.a.x), num(s.a.y), num(s.b.x), num(s.b.y), hex(s.col), num(s.width))
}

// svgText writes a label, its length fixed to the measured one so a
// viewer's substitute for the Go font keeps the layout.
func svgText(b *bytes.Buffer, l label) {
	anchor := [...]string{"start", "middle", "end"}[l.anchor]
	rot := ""
	if l.vertical {
		rot = fmt.Sprintf(` transform="rotate(-90 %s %s)"`, num(l.x), num(l.y))
	}
	weight := ""
	if l.bold {
		weight = ` font-weight="bold"`
	}
	length := ""
	if l.width > 0 {
		length = fmt.Sprintf(` textLength="%s" lengthAdjust="spacingAndGlyphs"`, num(l.width))
	}
	fmt.Fprintf(b, `<text class="%s" x="%s" y="%s" font-size="%s"%s text-anchor="%s" fill="%s"%s%s>`,
		l.class, num(l.x), num(l.y), num(l.size), weight, anchor, hex(l.col), length, rot)
	xml.EscapeText(b, []byte(l.text))
	b.WriteString("</text>\n")
}

func attr(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

func hex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// num formats a coordinate with at most two decimals.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" || s == "" {
		return "0"
	}
	return s
}
