package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Point is one measurement: the wall time in seconds of a run with M
// workers.
type Point struct {
	M       float64 `json:"m"`
	Seconds float64 `json:"seconds"`
}

// ErrPoints is matched by the errors of ParsePoints.
var ErrPoints = errors.New("sim: bad measurements")

// Limits of ParsePoints.
const (
	maxPoints    = 100_000
	maxPointLine = 4096
)

// ParsePoints reads measurements, one "M seconds" row per line (separated by
// spaces, tabs or a comma). Blank lines and lines starting with '#' are
// skipped; anything after a second field's '#' is a comment. M must be in
// [1, 1e6] and seconds finite and > 0. Errors name the line and match
// ErrPoints.
func ParsePoints(r io.Reader) ([]Point, error) {
	var pts []Point
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxPointLine)
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == '\r' })
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("%w: line %d: want \"M seconds\", got %d fields", ErrPoints, line, len(fields))
		}
		m, err1 := strconv.ParseFloat(fields[0], 64)
		s, err2 := strconv.ParseFloat(fields[1], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: line %d: not numbers: %q", ErrPoints, line, strings.TrimSpace(text))
		}
		if !(m >= 1 && m <= 1e6) {
			return nil, fmt.Errorf("%w: line %d: M must be in [1, 1e6], got %g", ErrPoints, line, m)
		}
		if !(s > 0 && s <= math.MaxFloat64) {
			return nil, fmt.Errorf("%w: line %d: seconds must be finite and > 0, got %g", ErrPoints, line, s)
		}
		if len(pts) == maxPoints {
			return nil, fmt.Errorf("%w: more than %d rows", ErrPoints, maxPoints)
		}
		pts = append(pts, Point{M: m, Seconds: s})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: line %d longer than %d bytes", ErrPoints, line+1, maxPointLine)
		}
		return nil, err
	}
	return pts, nil
}

// FitStats describes the quality of a least-squares fit.
type FitStats struct {
	Points int     `json:"points"`
	RMSE   float64 `json:"rmse_seconds"` // root mean squared residual
	R2     float64 `json:"r2"`           // coefficient of determination
}

// FitUSL fits f, σ, κ and T1 to measurements by least squares on seconds:
// it minimises Σ (T1·((1−f) + f/M + σ(M−1) + κM(M−1)) − seconds)² subject to
// f in [0, 1], σ >= 0, κ >= 0 and T1 > 0. Writing a = T1(1−f), b = T1·f,
// c = T1·σ, d = T1·κ makes the model linear with a, b, c, d >= 0, which is
// solved exactly as a non-negative least-squares problem by trying every
// support set. It needs at least 4 distinct worker counts.
func FitUSL(pts []Point) (USL, float64, FitStats, error) {
	distinct := map[float64]bool{}
	for _, p := range pts {
		distinct[p.M] = true
	}
	if len(distinct) < 4 {
		return USL{}, 0, FitStats{}, fmt.Errorf("%w: need measurements at 4 or more distinct worker counts to fit f, sigma, kappa and T1, got %d", ErrPoints, len(distinct))
	}
	basis := func(m float64) [4]float64 { return [4]float64{1, 1 / m, m - 1, m * (m - 1)} }
	y := make([]float64, len(pts))
	for i, p := range pts {
		y[i] = p.Seconds
	}
	bestSSE := math.Inf(1)
	var best [4]float64
	for mask := 1; mask < 16; mask++ {
		var cols []int
		for j := range 4 {
			if mask&(1<<j) != 0 {
				cols = append(cols, j)
			}
		}
		a := make([][]float64, len(pts))
		for i, p := range pts {
			row := basis(p.M)
			a[i] = make([]float64, len(cols))
			for k, j := range cols {
				a[i][k] = row[j]
			}
		}
		x, ok := leastSquares(a, y)
		if !ok {
			continue
		}
		var coef [4]float64
		feasible := true
		for k, j := range cols {
			if x[k] < 0 {
				feasible = false
			}
			coef[j] = x[k]
		}
		if !feasible || coef[0]+coef[1] <= 0 {
			continue
		}
		sse := 0.0
		for i, p := range pts {
			row := basis(p.M)
			pred := coef[0]*row[0] + coef[1]*row[1] + coef[2]*row[2] + coef[3]*row[3]
			sse += (pred - y[i]) * (pred - y[i])
		}
		if sse < bestSSE {
			bestSSE, best = sse, coef
		}
	}
	if math.IsInf(bestSSE, 1) {
		return USL{}, 0, FitStats{}, fmt.Errorf("%w: no fit with f in [0, 1], sigma >= 0, kappa >= 0", ErrPoints)
	}
	t1 := best[0] + best[1]
	u := USL{F: best[1] / t1, Sigma: best[2] / t1, Kappa: best[3] / t1}
	mean := 0.0
	for _, v := range y {
		mean += v
	}
	mean /= float64(len(y))
	sst := 0.0
	for _, v := range y {
		sst += (v - mean) * (v - mean)
	}
	st := FitStats{Points: len(pts), RMSE: math.Sqrt(bestSSE / float64(len(pts))), R2: 1}
	if sst > 0 {
		st.R2 = 1 - bestSSE/sst
	}
	return u, t1, st, nil
}

// leastSquares solves min |Ax − y|² by Householder QR on column-scaled A;
// ok is false if A is rank-deficient.
func leastSquares(a [][]float64, y []float64) (x []float64, ok bool) {
	rows, cols := len(a), len(a[0])
	if rows < cols {
		return nil, false
	}
	// Copy and scale columns to unit norm: the basis spans many orders of
	// magnitude (1/M next to M²).
	q := make([][]float64, rows)
	for i := range a {
		q[i] = append([]float64(nil), a[i]...)
	}
	scale := make([]float64, cols)
	for j := range cols {
		n := 0.0
		for i := range rows {
			n += q[i][j] * q[i][j]
		}
		n = math.Sqrt(n)
		if n == 0 {
			return nil, false
		}
		scale[j] = n
		for i := range rows {
			q[i][j] /= n
		}
	}
	b := append([]float64(nil), y...)
	for j := range cols {
		norm := 0.0
		for i := j; i < rows; i++ {
			norm += q[i][j] * q[i][j]
		}
		norm = math.Sqrt(norm)
		if norm < 1e-10 {
			return nil, false
		}
		if q[j][j] > 0 {
			norm = -norm
		}
		// v = column − norm·e_j, stored in place; R[j][j] = norm.
		q[j][j] -= norm
		vv := 0.0
		for i := j; i < rows; i++ {
			vv += q[i][j] * q[i][j]
		}
		apply := func(col func(i int) *float64) {
			dot := 0.0
			for i := j; i < rows; i++ {
				dot += q[i][j] * *col(i)
			}
			f := 2 * dot / vv
			for i := j; i < rows; i++ {
				*col(i) -= f * q[i][j]
			}
		}
		for k := j + 1; k < cols; k++ {
			apply(func(i int) *float64 { return &q[i][k] })
		}
		apply(func(i int) *float64 { return &b[i] })
		q[j][j] = norm // the diagonal of R; below it, v (no longer needed)
	}
	x = make([]float64, cols)
	for j := cols - 1; j >= 0; j-- {
		s := b[j]
		for k := j + 1; k < cols; k++ {
			s -= q[j][k] * x[k]
		}
		x[j] = s / q[j][j]
	}
	for j := range x {
		x[j] /= scale[j]
	}
	return x, true
}

// AnalyzeFit fits the law to pts (FitUSL) and evaluates the fitted law at
// m workers (MaxM(pts) is the largest measured count); the report carries
// the fit's statistics.
func AnalyzeFit(pts []Point, m float64) (USLReport, error) {
	u, t1, st, err := FitUSL(pts)
	if err != nil {
		return USLReport{}, err
	}
	r, err := u.Analyze(t1, m)
	if err != nil {
		return r, err
	}
	r.Fit = &st
	return r, nil
}

// MaxM is the largest worker count of pts (0 for none).
func MaxM(pts []Point) float64 {
	m := 0.0
	for _, p := range pts {
		m = max(m, p.M)
	}
	return m
}
