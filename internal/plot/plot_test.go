package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// node is a generic XML element, for inspecting SVG output.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []node     `xml:",any"`
}

func (n *node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// all returns the elements below n (n included) for which keep is true.
func (n *node) all(keep func(*node) bool) []*node {
	var out []*node
	if keep(n) {
		out = append(out, n)
	}
	for i := range n.Nodes {
		out = append(out, n.Nodes[i].all(keep)...)
	}
	return out
}

func byClass(class string) func(*node) bool {
	return func(n *node) bool { return n.attr("class") == class }
}

func parseSVG(t *testing.T, b []byte) *node {
	t.Helper()
	var root node
	if err := xml.Unmarshal(b, &root); err != nil {
		t.Fatalf("SVG does not parse: %v\n%s", err, b)
	}
	if root.XMLName.Local != "svg" {
		t.Fatalf("root element %q", root.XMLName.Local)
	}
	return &root
}

func lineChart() Chart {
	xs := []float64{16, 32, 64, 128, 256, 512, 1024}
	return Chart{
		Title: "makespan <by> agents & mode",
		X:     Axis{Label: "agents", Log: true},
		Y:     Axis{Label: "makespan (s)"},
		Series: []Series{
			{Name: "central", X: xs, Y: []float64{66000, 33000, 16600, 8400, 4300, 2300, 5200}},
			{Name: "self", X: xs, Y: []float64{67000, 33600, 17000, 8700, 4500, 2400, 1400}},
		},
	}
}

func TestSVGLineChart(t *testing.T) {
	t.Parallel()
	c := lineChart()
	b, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	root := parseSVG(t, b)
	if w, h := root.attr("width"), root.attr("height"); w != "960" || h != "600" {
		t.Errorf("size %sx%s, want 960x600", w, h)
	}
	texts := func(class string) []string {
		var out []string
		for _, n := range root.all(byClass(class)) {
			out = append(out, n.Text)
		}
		return out
	}
	if got := texts("title"); !slices.Equal(got, []string{c.Title}) {
		t.Errorf("title %q", got)
	}
	if got := texts("axis-label x"); !slices.Equal(got, []string{"agents"}) {
		t.Errorf("x axis label %q", got)
	}
	if got := texts("axis-label y"); !slices.Equal(got, []string{"makespan (s)"}) {
		t.Errorf("y axis label %q", got)
	}
	if got := texts("legend"); !slices.Equal(got, []string{"central", "self"}) {
		t.Errorf("legend %q", got)
	}
	if got := texts("tick x"); !slices.Equal(got, []string{"16", "32", "64", "128", "256", "512", "1024"}) {
		t.Errorf("x ticks %q", got)
	}
	if got := texts("tick y"); !slices.Equal(got, []string{"0", "20k", "40k", "60k", "80k"}) {
		t.Errorf("y ticks %q", got)
	}
	groups := root.all(byClass("series"))
	if len(groups) != 2 {
		t.Fatalf("%d series groups, want 2", len(groups))
	}
	area := root.all(byClass("plot-area"))[0]
	x0, y0 := atof(t, area.attr("x")), atof(t, area.attr("y"))
	x1, y1 := x0+atof(t, area.attr("width")), y0+atof(t, area.attr("height"))
	for i, g := range groups {
		paths := g.all(func(n *node) bool { return n.XMLName.Local == "path" })
		if g.attr("data-name") != c.Series[i].Name || len(paths) != 1 {
			t.Fatalf("group %q has %d paths, want one", g.attr("data-name"), len(paths))
		}
		d := strings.Fields(strings.NewReplacer("M", "", "L", "").Replace(paths[0].attr("d")))
		if len(d) != 2*len(c.Series[i].X) {
			t.Fatalf("path %q has %d coordinates", paths[0].attr("d"), len(d))
		}
		// Every vertex is inside the plot area; the x of the first is the
		// left edge (16 is the smallest tick), of the last the right edge.
		for k := 0; k < len(d); k += 2 {
			x, y := atof(t, d[k]), atof(t, d[k+1])
			if x < x0-0.01 || x > x1+0.01 || y < y0-0.01 || y > y1+0.01 {
				t.Errorf("vertex (%g, %g) outside the plot area", x, y)
			}
		}
		if atof(t, d[0]) != x0 || atof(t, d[len(d)-2]) != x1 {
			t.Errorf("path spans x %s..%s, plot area %g..%g", d[0], d[len(d)-2], x0, x1)
		}
		if got := len(g.all(func(n *node) bool { return n.XMLName.Local == "circle" })); got != len(c.Series[i].X) {
			t.Errorf("%d markers", got)
		}
	}
	// Higher values are drawn higher: central's 66000 above its 2300.
	d := strings.Fields(strings.NewReplacer("M", "", "L", "").Replace(groups[0].all(func(n *node) bool { return n.XMLName.Local == "path" })[0].attr("d")))
	if atof(t, d[1]) >= atof(t, d[11]) {
		t.Errorf("y of 66000 (%s) is not above y of 2300 (%s)", d[1], d[11])
	}
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

func TestSVGBarChart(t *testing.T) {
	t.Parallel()
	c := Chart{Kind: Bar, Title: "eval", Y: Axis{Label: "ratio"}, Categories: []string{"quality", "time", "cost"},
		Series: []Series{{Name: "single", Y: []float64{1, 0.8, 0.3}}, {Name: "swarm", Y: []float64{0.75, 0.4, 0}}}}
	b, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	root := parseSVG(t, b)
	groups := root.all(byClass("series"))
	if len(groups) != 2 {
		t.Fatalf("%d series groups", len(groups))
	}
	for i, g := range groups {
		bars := g.all(byClass("bar"))
		if len(bars) != 3 {
			t.Fatalf("series %d: %d bars, want 3", i, len(bars))
		}
		// Bar heights are proportional to the values (the axis starts at 0).
		h0 := atof(t, bars[0].attr("height"))
		for k, bar := range bars {
			want := c.Series[i].Y[k] / c.Series[i].Y[0] * h0
			if got := atof(t, bar.attr("height")); math.Abs(got-want) > 0.02 {
				t.Errorf("series %d bar %d height %g, want %g", i, k, got, want)
			}
		}
	}
	var ticks []string
	for _, n := range root.all(byClass("tick x")) {
		ticks = append(ticks, n.Text)
	}
	if !slices.Equal(ticks, c.Categories) {
		t.Errorf("categories %q", ticks)
	}
}

// TestPNG decodes the PNG: its size, ink beyond the background, and
// pixels of each series' color.
func TestPNG(t *testing.T) {
	t.Parallel()
	c := lineChart()
	c.Width, c.Height = 800, 500
	b, err := c.PNG()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if r := img.Bounds(); r.Dx() != 800 || r.Dy() != 500 {
		t.Fatalf("PNG is %v, want 800x500", r)
	}
	bg := Background()
	ink, exact := 0, map[color.RGBA]int{}
	for y := range 500 {
		for x := range 800 {
			r, g, bl, _ := img.At(x, y).RGBA()
			px := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 0xff}
			if px != bg {
				ink++
			}
			exact[px]++
		}
	}
	if ink < 5000 || ink > 800*500/2 {
		t.Errorf("%d non-background pixels", ink)
	}
	for i := range c.Series {
		if n := exact[SeriesColor(i)]; n < 200 {
			t.Errorf("series %d color %v: only %d pixels", i, SeriesColor(i), n)
		}
	}
	if n := exact[hexColor(axisHex)]; n < 1000 {
		t.Errorf("text and axes: only %d pixels", n)
	}
	// The same chart renders to the same bytes.
	again, _ := c.PNG()
	if !bytes.Equal(b, again) {
		t.Error("rendering is not deterministic")
	}
}

// TestTextRendering checks that the rasterized text is the Go font's:
// anti-aliased (grey levels between ink and paper), as wide as it was
// measured, and turned for a vertical label.
func TestTextRendering(t *testing.T) {
	t.Parallel()
	f := newFaces()
	c := &canvas{img: rasterize(&scene{w: 120, h: 40, faces: f}), f: f}
	l := label{text: "Hé 12k", x: 10, y: 28, size: 20, width: f.width("Hé 12k", 20, false), col: hexColor(0)}
	c.text(l)
	inked := func(img *image.RGBA) (x0, y0, x1, y1, levels int) {
		x0, y0 = img.Rect.Dx(), img.Rect.Dy()
		seen := map[uint8]bool{}
		for y := range img.Rect.Dy() {
			for x := range img.Rect.Dx() {
				r := img.RGBAAt(x, y).R
				if r == 0xff {
					continue
				}
				seen[r] = true
				x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
			}
		}
		return x0, y0, x1, y1, len(seen)
	}
	x0, y0, x1, y1, levels := inked(c.img)
	if levels < 8 {
		t.Errorf("%d grey levels in the text: not anti-aliased", levels)
	}
	if got := float64(x1 - x0 + 1); math.Abs(got-l.width) > 3 {
		t.Errorf("the text is %g px wide, measured %g", got, l.width)
	}
	if y1 > 28+5 || y0 < 28-20 {
		t.Errorf("the text spans rows %d..%d, not around its baseline 28", y0, y1)
	}
	// Vertical text reads bottom to top: tall and narrow, ending at its
	// anchor.
	c = &canvas{img: rasterize(&scene{w: 40, h: 120, faces: f}), f: f}
	c.text(label{text: "Hé 12k", x: 28, y: 110, size: 20, width: l.width, vertical: true, col: hexColor(0)})
	x0, y0, x1, y1, _ = inked(c.img)
	if w, h := x1-x0+1, y1-y0+1; h < 2*w || y1 > 111 || x1 > 28+5 {
		t.Errorf("vertical text occupies %d..%d x %d..%d", x0, x1, y0, y1)
	}
}

// TestFontMetrics: the layout measures with the Go font, so wider text
// measures wider and a fitted label fits.
func TestFontMetrics(t *testing.T) {
	t.Parallel()
	f := newFaces()
	if a, b := f.width("iiii", 12, false), f.width("WWWW", 12, false); !(a > 0 && b > 2*a) {
		t.Errorf("widths iiii=%g WWWW=%g: not a proportional font", a, b)
	}
	if f.width("x", 24, false) <= f.width("x", 12, false) || f.width("bold", 12, true) <= f.width("bold", 12, false) {
		t.Error("size or weight does not change the width")
	}
	long := strings.Repeat("makespan ", 20)
	if got := f.fit(long, 12, false, 100); f.width(got, 12, false) > 100 || !strings.HasSuffix(got, "…") {
		t.Errorf("fit = %q (%g px)", got, f.width(got, 12, false))
	}
}

func TestTicks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lo, hi  float64
		log     bool
		want    []float64
		wlo, wh float64
	}{
		{0, 66000, false, []float64{0, 20000, 40000, 60000, 80000}, 0, 80000},
		{0.12, 0.93, false, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, 0, 1},
		{-3, 7, false, []float64{-4, -2, 0, 2, 4, 6, 8}, -4, 8},
		{5, 5, false, []float64{0, 1, 2, 3, 4, 5}, 0, 5},
		{0, 0, false, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, 0, 1},
		{-5, -5, false, []float64{-5.6, -5.4, -5.2, -5, -4.8, -4.6, -4.4}, -5.6, -4.4},
		{16, 1024, true, []float64{16, 32, 64, 128, 256, 512, 1024}, 16, 1024},
		{3, 100, true, []float64{2, 5, 10, 20, 50, 100}, 2, 100},
		{1500, 47000, true, []float64{1000, 2000, 5000, 10000, 20000, 50000}, 1000, 50000},
		{16, 16, true, []float64{16, 32}, 16, 32},
		{0.5, 2e6, true, []float64{0.1, 1, 10, 100, 1000, 1e4, 1e5, 1e6, 1e7}, 0.1, 1e7},
		{1, 1, true, []float64{1, 2}, 1, 2},
	}
	for _, tt := range tests {
		vs := []float64{tt.lo, tt.hi}
		a := numericAxis(Axis{Log: tt.log}, vs, false)
		if tt.lo >= 0 && !tt.log { // as the Y axis of a line chart
			a = numericAxis(Axis{}, vs, true)
		}
		if len(a.ticks) != len(tt.want) || math.Abs(a.lo-tt.wlo) > 1e-9 || math.Abs(a.hi-tt.wh) > 1e-9 {
			t.Errorf("axis(%g, %g, log %v) = [%g, %g] %v, want [%g, %g] %v", tt.lo, tt.hi, tt.log, a.lo, a.hi, a.ticks, tt.wlo, tt.wh, tt.want)
			continue
		}
		for i := range a.ticks {
			if math.Abs(a.ticks[i]-tt.want[i]) > 1e-9*max(1, math.Abs(tt.want[i])) {
				t.Errorf("axis(%g, %g): ticks %v, want %v", tt.lo, tt.hi, a.ticks, tt.want)
				break
			}
		}
	}
	for _, tc := range []struct {
		ticks []float64
		log   bool
		want  []string
	}{
		{[]float64{0, 20000, 40000, 60000}, false, []string{"0", "20k", "40k", "60k"}},
		{[]float64{0, 5000, 10000, 15000}, false, []string{"0", "5k", "10k", "15k"}}, // never "5000" beside "10k"
		{[]float64{0, 0.2, 0.4, 1}, false, []string{"0", "0.2", "0.4", "1.0"}},
		{[]float64{0, 2.5e6, 5e6}, false, []string{"0", "2.5M", "5.0M"}},
		{[]float64{-20000, 0, 20000}, false, []string{"-20k", "0", "20k"}},
		{[]float64{0.1, 1, 10, 100}, true, []string{"0.1", "1", "10", "100"}},
		{[]float64{1000, 2000, 5000, 10000, 50000}, true, []string{"1k", "2k", "5k", "10k", "50k"}},
		{[]float64{0, 1e-5, 2e-5}, false, []string{"0", "1.0e-05", "2.0e-05"}},
		{[]float64{3e9, 6e9}, false, []string{"3G", "6G"}},
	} {
		f := tickFormat(tc.ticks, tc.log)
		var got []string
		for _, v := range tc.ticks {
			got = append(got, f(v))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ticks %v (log %v) read %q, want %q", tc.ticks, tc.log, got, tc.want)
		}
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	ok := Series{Name: "s", X: []float64{1, 2}, Y: []float64{1, 2}}
	tests := []struct {
		name string
		c    Chart
	}{
		{"no series", Chart{}},
		{"length mismatch", Chart{Series: []Series{{X: []float64{1}, Y: []float64{1, 2}}}}},
		{"empty series", Chart{Series: []Series{{}}}},
		{"NaN", Chart{Series: []Series{{X: []float64{1}, Y: []float64{math.NaN()}}}}},
		{"Inf x", Chart{Series: []Series{{X: []float64{math.Inf(1)}, Y: []float64{1}}}}},
		{"zero on log x", Chart{X: Axis{Log: true}, Series: []Series{{X: []float64{0, 1}, Y: []float64{1, 2}}}}},
		{"negative on log y", Chart{Y: Axis{Log: true}, Series: []Series{{X: []float64{1}, Y: []float64{-1}}}}},
		{"too small", Chart{Width: 50, Height: 50, Series: []Series{ok}}},
		{"too large", Chart{Width: 100000, Height: 500, Series: []Series{ok}}},
		{"unknown kind", Chart{Kind: 7, Series: []Series{ok}}},
		{"bar without categories", Chart{Kind: Bar, Series: []Series{ok}}},
		{"bar count mismatch", Chart{Kind: Bar, Categories: []string{"a"}, Series: []Series{ok}}},
		{"log range", Chart{Y: Axis{Log: true, Min: -1, Max: 10}, Series: []Series{ok}}},
		{"NaN range", Chart{Y: Axis{Min: math.NaN()}, Series: []Series{ok}}},
		{"labels fill it", Chart{Width: 200, Height: 200, Y: Axis{Label: "y"}, Series: slices.Repeat([]Series{{Name: strings.Repeat("long name ", 20), X: []float64{1, 2}, Y: []float64{1, 2}}}, 12)}},
	}
	for _, tt := range tests {
		if _, err := tt.c.SVG(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: SVG err %v, want ErrInvalid", tt.name, err)
		}
		if _, err := tt.c.PNG(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: PNG err %v, want ErrInvalid", tt.name, err)
		}
	}
}

// TestRandomCharts renders random valid charts (odd sizes, fixed ranges
// that cut the data, one point, huge and tiny values) without panicking
// and with well-formed SVG.
func TestRandomCharts(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 60 {
		c := Chart{Kind: Kind(r.IntN(2)), Title: strings.Repeat("t", r.IntN(200)), Width: 200 + r.IntN(500), Height: 200 + r.IntN(400),
			X: Axis{Label: "x", Log: r.IntN(2) == 0}, Y: Axis{Label: "ÿ<&>", Log: r.IntN(3) == 0}}
		if r.IntN(4) == 0 {
			c.Y.Min, c.Y.Max = 1, 1+r.Float64()*100
		}
		n := 1 + r.IntN(30)
		scale := math.Pow(10, float64(r.IntN(30)-15))
		for k := range n {
			c.Categories = append(c.Categories, strings.Repeat("c", r.IntN(12))+string(rune('a'+k%26)))
		}
		for s := range 1 + r.IntN(5) {
			se := Series{Name: strings.Repeat("s", r.IntN(60))}
			for k := range n {
				se.X = append(se.X, (float64(k)+1+r.Float64())*scale)
				se.Y = append(se.Y, (r.Float64()+0.01)*scale*float64(s+1))
			}
			c.Series = append(c.Series, se)
		}
		b, err := c.SVG()
		if errors.Is(err, ErrInvalid) && strings.Contains(err.Error(), "too small") {
			continue
		}
		if err != nil {
			t.Fatalf("chart %d: %v", i, err)
		}
		parseSVG(t, b)
		if _, err := c.Image(); err != nil {
			t.Fatalf("chart %d: %v", i, err)
		}
	}
}

func BenchmarkPNG(b *testing.B) {
	c := lineChart()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.PNG(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSVG(b *testing.B) {
	c := lineChart()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.SVG(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestErrorBarsAndValues: a bar chart with error bars and values writes
// each value in one format above its bar, an error bar per value with a
// half-width, and "n/a" for a category without data; a line series with
// errors gets its bars too.
func TestErrorBarsAndValues(t *testing.T) {
	t.Parallel()
	c := Chart{Kind: Bar, Y: Axis{Min: 0, Max: 1}, Categories: []string{"a", "b", "c"}, Values: true,
		Series: []Series{{Name: "s", Y: []float64{1, 0.5, 0.25}, Err: []float64{0.1, 0, 0.05}}, {Name: "t", Y: []float64{0.4, math.NaN(), 0.2}}}}
	b, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	root := parseSVG(t, b)
	var values, missing []string
	for _, n := range root.all(byClass("value")) {
		values = append(values, n.Text)
	}
	for _, n := range root.all(byClass("value missing")) {
		missing = append(missing, n.Text)
	}
	if want := []string{"1.00", "0.50", "0.25", "0.40", "0.20"}; !slices.Equal(values, want) {
		t.Errorf("values %q, want %q", values, want)
	}
	if !slices.Equal(missing, []string{"n/a"}) {
		t.Errorf("missing %q", missing)
	}
	if n := len(root.all(byClass("error-bar"))); n != 2*3 { // a stem and two caps each
		t.Errorf("%d error-bar lines, want 6", n)
	}
	if got := len(root.all(byClass("bar"))); got != 5 {
		t.Errorf("%d bars, want 5 (one has no data)", got)
	}
	// Labels replace the values they are given for.
	c.Series[0].Labels = []string{"10 of 10", "", "<2.5s>"}
	if b, err = c.SVG(); err != nil {
		t.Fatal(err)
	}
	values = values[:0]
	for _, n := range parseSVG(t, b).all(byClass("value")) {
		values = append(values, n.Text)
	}
	if want := []string{"10 of 10", "0.50", "<2.5s>", "0.40", "0.20"}; !slices.Equal(values, want) {
		t.Errorf("labelled values %q, want %q", values, want)
	}
	c.Series[1].Labels = []string{"x"}
	if _, err := c.SVG(); err == nil || !strings.Contains(err.Error(), "1 labels for 3 values") {
		t.Errorf("labels of the wrong length: %v", err)
	}
	l := lineChart()
	l.Series[0].Err = make([]float64, 7)
	l.Series[0].Err[3] = 1000
	if b, err = l.SVG(); err != nil {
		t.Fatal(err)
	}
	if n := len(parseSVG(t, b).all(byClass("error-bar"))); n != 3 {
		t.Errorf("line chart: %d error-bar lines, want 3", n)
	}
	for _, bad := range [][]float64{{1}, {-1, 0, 0, 0, 0, 0, 0}, {math.NaN(), 0, 0, 0, 0, 0, 0}} {
		l.Series[0].Err = bad
		if _, err := l.SVG(); !errors.Is(err, ErrInvalid) {
			t.Errorf("Err %v: %v, want ErrInvalid", bad, err)
		}
	}
}

// TestTimeAxis: Unix seconds on a wall-clock axis tick on round times of
// the location, all in one format, inside the data's range.
func TestTimeAxis(t *testing.T) {
	t.Parallel()
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600)
	}
	start := time.Date(2026, 12, 1, 14, 3, 17, 0, paris)
	for _, tc := range []struct {
		span time.Duration
		want []string
	}{
		{2 * time.Minute, []string{"14:03:30", "14:04:00", "14:04:30", "14:05:00"}},
		{40 * time.Minute, []string{"14:10", "14:20", "14:30", "14:40"}},
		{20 * time.Second, []string{"14:03:20", "14:03:25", "14:03:30", "14:03:35"}},
	} {
		xs := []float64{float64(start.Unix()), float64(start.Add(tc.span).Unix())}
		c := Chart{X: Axis{Time: true, Location: paris}, Series: []Series{{Name: "q", X: xs, Y: []float64{1, 2}}}, Width: 640, Height: 300}
		b, err := c.SVG()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range parseSVG(t, b).all(byClass("tick x")) {
			got = append(got, n.Text)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("span %v: ticks %q, want %q", tc.span, got, tc.want)
		}
	}
}
