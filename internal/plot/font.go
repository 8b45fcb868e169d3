package plot

import (
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// The charts' text is set in the Go fonts (TrueType, embedded in the
// binary by golang.org/x/image/font/gofont): measured here for the layout,
// rasterized here for the PNG, and named in the SVG, which also fixes
// each text's length to the measured one so a viewer without the Go font
// keeps the layout.

// fontFamily is the SVG's font-family: the Go font first, then look-alikes.
const fontFamily = "Go, 'Go Regular', 'DejaVu Sans', Verdana, Arial, sans-serif"

// goFonts parses the embedded fonts once; a parsed sfnt.Font is only read
// afterwards (each face has its own buffer), so sharing it is safe.
var goFonts = sync.OnceValues(func() (regular, bold *sfnt.Font) {
	var err error
	if regular, err = opentype.Parse(goregular.TTF); err != nil {
		panic("plot: the embedded Go font does not parse: " + err.Error())
	}
	if bold, err = opentype.Parse(gobold.TTF); err != nil {
		panic("plot: the embedded Go bold font does not parse: " + err.Error())
	}
	return regular, bold
})

// faces holds the font faces of one rendering by size; a face is not safe
// for concurrent use, so each rendering has its own.
type faces struct {
	m map[faceKey]font.Face
}

type faceKey struct {
	size float64
	bold bool
}

func newFaces() *faces { return &faces{m: map[faceKey]font.Face{}} }

func (f *faces) face(size float64, bold bool) font.Face {
	k := faceKey{size, bold}
	if fc, ok := f.m[k]; ok {
		return fc
	}
	reg, b := goFonts()
	src := reg
	if bold {
		src = b
	}
	fc, err := opentype.NewFace(src, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		panic("plot: a face of the Go font: " + err.Error()) // sizes are positive: unreachable
	}
	f.m[k] = fc
	return fc
}

// width is the advance width of s in pixels.
func (f *faces) width(s string, size float64, bold bool) float64 {
	return fix(font.MeasureString(f.face(size, bold), s))
}

// capHeight is the height of a capital letter above the baseline.
func (f *faces) capHeight(size float64) float64 {
	m := f.face(size, false).Metrics()
	if m.CapHeight > 0 {
		return fix(m.CapHeight)
	}
	return fix(m.Ascent) * 0.75
}

// descent is how far glyphs reach below the baseline.
func (f *faces) descent(size float64) float64 { return fix(f.face(size, false).Metrics().Descent) }

func fix(v fixed.Int26_6) float64 { return float64(v) / 64 }

// fit shortens s with a trailing "…" until it is at most width pixels wide.
func (f *faces) fit(s string, size float64, bold bool, width float64) string {
	if f.width(s, size, bold) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 1 {
		r = r[:len(r)-1]
		if t := string(r) + "…"; f.width(t, size, bold) <= width {
			return t
		}
	}
	return ""
}
