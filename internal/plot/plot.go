// Package plot draws the charts of apiary's reports — line charts (on a
// numeric, logarithmic or wall-clock X axis) and grouped bar charts, with
// axes, tick labels written in one format per axis, axis titles, a title,
// a legend, error bars and values on bars — as SVG text and as PNG images.
// It stands alone: no other apiary package, no fonts from the system. Text
// is set in the Go fonts (TrueType, embedded); the PNG is rasterized here,
// and the SVG names the same font and fixes every text's measured length,
// so both have the same layout.
//
// A Chart is plain data; its zero value plus some Series is a valid line
// chart. Render it with SVG, PNG or Image. Rendering never modifies the
// Chart, so one Chart may be rendered concurrently.
//
// The SVG is meant to be read by programs too: the plot area is a <rect
// class="plot-area">, each line series is one <g class="series"
// data-name="NAME"> holding exactly one <path class="series-line"> (and a
// <circle> per point), each bar series a <g class="series"> of <rect
// class="bar"> (and <text class="value"> or <text class="value missing">),
// error bars are <line class="error-bar">, axis titles <text
// class="axis-label x|y">, tick labels <text class="tick x|y">, and every
// legend entry a <text class="legend">.
package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strconv"
	"time"
)

// ErrInvalid is matched by every error of this package: a chart that
// cannot be drawn (no series, mismatched lengths, NaN, a non-positive value
// on a log axis, ...).
var ErrInvalid = errors.New("plot: invalid chart")

// Kind is the type of chart.
type Kind int

const (
	// Line draws each series as a polyline through its points, in order,
	// with a marker at each point (when it has at most 60).
	Line Kind = iota
	// Bar draws one group of bars per category (Chart.Categories), one bar
	// per series in each group; the Y axis starts at zero.
	Bar
)

// Axis describes one axis.
type Axis struct {
	// Label is the axis title, e.g. "agents" or "makespan (s)".
	Label string
	// Log makes the scale logarithmic (base 2 ticks when the data span
	// fewer than 13 doublings, else base 10); every value must be > 0.
	// Ignored for the X axis of a bar chart.
	Log bool
	// Min and Max fix the range when Max > Min; otherwise the range is the
	// data's, widened to round ticks (and to include 0 on a linear Y axis
	// when all values are >= 0).
	Min, Max float64
	// Time makes the X axis of a line chart wall-clock time: the values
	// are Unix seconds, the ticks fall on round times (every 10 s, 1 min,
	// 15 min, ...) and read "15:04:05" (or "15:04", or "Jan 2 15:04"
	// across days) in Location (nil: UTC). The range is the data's.
	Time     bool
	Location *time.Location
}

// Series is one named set of values. For a line chart X and Y are the
// points (equal lengths, at least one); for a bar chart Y holds one value
// per category (NaN for a category without data, drawn as "n/a") and X is
// ignored.
type Series struct {
	Name string
	X, Y []float64
	// Err, if set, holds one half-width per value: an error bar from
	// Y-Err to Y+Err (a standard deviation over repeated runs, say) is
	// drawn at each value whose Err is > 0.
	Err []float64
	// Labels, if set, holds one text per value of a bar chart with
	// Values: written over the bar instead of the value ("" keeps the
	// value) — the measured figure of a bar that plots a ratio, say.
	Labels []string
	// Color is the series' color; the zero value picks the next color of a
	// built-in palette (by series index).
	Color color.RGBA
}

// Chart is one chart. Width and Height are in pixels; zero means 960×600.
type Chart struct {
	Kind       Kind
	Title      string
	X, Y       Axis
	Series     []Series
	Categories []string // bar charts: the groups along the X axis
	// Values writes each bar's value above it, in the Y axis's unit
	// ("12k"), or as ValueFormat writes it.
	Values      bool
	ValueFormat func(float64) string
	Width       int
	Height      int
}

// Size limits of a chart.
const (
	defaultWidth  = 960
	defaultHeight = 600
	minSize       = 200
	maxSize       = 8000
	maxSeries     = 64
	maxPoints     = 100_000
)

// palette holds distinguishable colors for series without one, as RGB hex:
// blue, red, green, orange, purple, brown, cyan, grey.
const palette = "1f77b4" + "d62728" + "2ca02c" + "ff7f0e" + "9467bd" + "8c564b" + "17becf" + "7f7f7f"

// SeriesColor returns the color series i is drawn with when its Color is
// zero.
func SeriesColor(i int) color.RGBA {
	n := len(palette) / 6
	h := palette[((i%n+n)%n)*6:][:6]
	v, _ := strconv.ParseUint(h, 16, 32)
	return hexColor(uint32(v))
}

// Background returns the color of every pixel nothing is drawn on: white.
func Background() color.RGBA { return hexColor(0xffffff) }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// validate checks c and returns its size.
func (c *Chart) validate() (w, h int, err error) {
	w, h = c.Width, c.Height
	if w == 0 {
		w = defaultWidth
	}
	if h == 0 {
		h = defaultHeight
	}
	if w < minSize || h < minSize || w > maxSize || h > maxSize {
		return 0, 0, invalid("size %dx%d outside [%d, %d]", w, h, minSize, maxSize)
	}
	if len(c.Series) == 0 || len(c.Series) > maxSeries {
		return 0, 0, invalid("want 1 to %d series, got %d", maxSeries, len(c.Series))
	}
	switch c.Kind {
	case Line:
	case Bar:
		if len(c.Categories) == 0 || len(c.Categories) > maxPoints {
			return 0, 0, invalid("a bar chart needs 1 to %d categories, got %d", maxPoints, len(c.Categories))
		}
	default:
		return 0, 0, invalid("unknown kind %d", c.Kind)
	}
	for _, a := range []*Axis{&c.X, &c.Y} {
		if !finite(a.Min) || !finite(a.Max) {
			return 0, 0, invalid("axis %q: range is not finite", a.Label)
		}
		if a.Log && a.Max > a.Min && a.Min <= 0 {
			return 0, 0, invalid("axis %q: log range must be > 0", a.Label)
		}
	}
	for i, s := range c.Series {
		n := len(s.Y)
		if c.Kind == Bar {
			if n != len(c.Categories) {
				return 0, 0, invalid("series %d (%q): %d values for %d categories", i, s.Name, n, len(c.Categories))
			}
		} else if n == 0 || n != len(s.X) || n > maxPoints {
			return 0, 0, invalid("series %d (%q): want 1 to %d points with as many X as Y, got %d X and %d Y", i, s.Name, maxPoints, len(s.X), n)
		}
		if s.Err != nil && len(s.Err) != n {
			return 0, 0, invalid("series %q: %d error bars for %d values", s.Name, len(s.Err), n)
		}
		if s.Labels != nil && len(s.Labels) != n {
			return 0, 0, invalid("series %q: %d labels for %d values", s.Name, len(s.Labels), n)
		}
		for j, e := range s.Err {
			if !finite(e) || e < 0 {
				return 0, 0, invalid("series %q: err[%d] = %g, want a finite half-width >= 0", s.Name, j, e)
			}
		}
		for j, y := range s.Y {
			if c.Kind == Bar && math.IsNaN(y) {
				continue // a category without data
			}
			if !finite(y) {
				return 0, 0, invalid("series %q: y[%d] is not finite", s.Name, j)
			}
			if c.Y.Log && y <= 0 {
				return 0, 0, invalid("series %q: y[%d] = %g on a log axis", s.Name, j, y)
			}
			if c.Kind == Bar {
				continue
			}
			x := s.X[j]
			if !finite(x) {
				return 0, 0, invalid("series %q: x[%d] is not finite", s.Name, j)
			}
			if c.X.Log && x <= 0 {
				return 0, 0, invalid("series %q: x[%d] = %g on a log axis", s.Name, j, x)
			}
		}
	}
	return w, h, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// SVG renders the chart as a standalone SVG document.
func (c *Chart) SVG() ([]byte, error) {
	sc, err := c.layout()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	writeSVG(&b, sc)
	return b.Bytes(), nil
}

// Image rasterizes the chart.
func (c *Chart) Image() (*image.RGBA, error) {
	sc, err := c.layout()
	if err != nil {
		return nil, err
	}
	return rasterize(sc), nil
}

// PNG renders the chart as a PNG image.
func (c *Chart) PNG() ([]byte, error) {
	img, err := c.Image()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteSVG writes the chart's SVG to w.
func (c *Chart) WriteSVG(w io.Writer) error {
	b, err := c.SVG()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// WritePNG writes the chart's PNG to w.
func (c *Chart) WritePNG(w io.Writer) error {
	b, err := c.PNG()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
