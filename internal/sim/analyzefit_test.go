package sim

import (
	"errors"
	"math"
	"testing"
)

// TestAnalyzeFit: the fitted law is evaluated where asked, with the fit's
// statistics; too few measurements are ErrPoints.
func TestAnalyzeFit(t *testing.T) {
	t.Parallel()
	law := USL{F: 0.9, Sigma: 0.01}
	var pts []Point
	for _, m := range []float64{1, 2, 4, 8} {
		pts = append(pts, Point{M: m, Seconds: 100 / law.Speedup(m)})
	}
	if got := MaxM(pts); got != 8 {
		t.Errorf("MaxM = %g, want 8", got)
	}
	r, err := AnalyzeFit(pts, MaxM(pts))
	if err != nil {
		t.Fatal(err)
	}
	if r.Fit == nil || r.M != 8 || math.Abs(r.T1-100) > 1e-6 || math.Abs(r.Speedup-law.Speedup(8)) > 1e-6 {
		t.Errorf("report %+v", r)
	}
	if _, err := AnalyzeFit(pts[:2], 2); !errors.Is(err, ErrPoints) {
		t.Errorf("two points: %v, want ErrPoints", err)
	}
}
