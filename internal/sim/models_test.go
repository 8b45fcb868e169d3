package sim

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// sig3 reports whether got equals want to 3 significant figures.
func sig3(got, want float64) bool {
	if want == 0 {
		return got == 0
	}
	scale := math.Pow(10, math.Floor(math.Log10(math.Abs(want)))-2)
	return math.Round(got/scale) == math.Round(want/scale)
}

func TestUSLWorkedExample(t *testing.T) {
	t.Parallel()
	u := USL{F: 0.70, Sigma: 0.04, Kappa: 0.02}
	r, err := u.Analyze(600, 4)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"speedup(4)", r.Speedup, 1.20},
		{"T4", r.TM, 501},
		{"M*", *r.MStar, 5.74},
		{"speedup(8)", u.Speedup(8), 0.559},
		// Not in the issue: the true peak of the same curve.
		{"peak", *r.MPeak, 2.44},
		{"speedup(peak)", *r.SpeedupAtMPeak, 1.40},
	}
	for _, c := range checks {
		if !sig3(c.got, c.want) {
			t.Errorf("%s = %.6g, want %.3g", c.name, c.got, c.want)
		}
	}
	if *r.BestM != 2 {
		t.Errorf("best integer M = %d, want 2", *r.BestM)
	}
}

func TestUSLValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		u     USL
		t1, m float64
		param string
	}{
		{USL{F: 1.5}, 1, 1, "f"},
		{USL{F: -0.1}, 1, 1, "f"},
		{USL{F: math.NaN()}, 1, 1, "f"},
		{USL{F: 0.5, Sigma: -1}, 1, 1, "sigma"},
		{USL{F: 0.5, Kappa: math.Inf(1)}, 1, 1, "kappa"},
		{USL{F: 0.5}, 0, 1, "t1"},
		{USL{F: 0.5}, 1, 0.5, "m"},
	}
	for _, tt := range tests {
		_, err := tt.u.Analyze(tt.t1, tt.m)
		var pe *ParamError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &pe) || pe.Param != tt.param {
			t.Errorf("Analyze(%+v, %g, %g) = %v, want a ParamError for %s", tt.u, tt.t1, tt.m, err, tt.param)
		}
	}
}

// TestUSLProperties: for random valid parameters, speedup <= 1/(1−f) and
// <= M, and the peak beats every integer worker count.
func TestUSLProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		u := USL{F: r.Float64(), Sigma: r.Float64() * r.Float64() * 0.1, Kappa: r.Float64() * r.Float64() * 0.01}
		if r.IntN(5) == 0 {
			u.Sigma = 0
		}
		if r.IntN(5) == 0 {
			u.Kappa = 0
		}
		bound := 1 / (1 - u.F)
		for m := 1.0; m <= 4096; m *= 1 + r.Float64() {
			s := u.Speedup(m)
			if s > bound*(1+1e-12) || s > m*(1+1e-12) {
				t.Fatalf("%+v: speedup(%g) = %g exceeds min(1/(1−f), M) = %g", u, m, s, min(bound, m))
			}
		}
		p := u.Peak()
		if math.IsInf(p, 1) {
			if u.Sigma != 0 || u.Kappa != 0 {
				t.Fatalf("%+v: unbounded peak with contention", u)
			}
			continue
		}
		best := u.BestInteger()
		for m := 1; m <= 2000; m++ {
			if s := u.Speedup(float64(m)); s > u.Speedup(p)*(1+1e-9) || s > u.Speedup(float64(best))*(1+1e-12) {
				t.Fatalf("%+v: speedup(%d) = %g beats the peak %g (%g) or best integer %d", u, m, s, p, u.Speedup(p), best)
			}
		}
	}
}

func TestFitUSLRecoversParameters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		u    USL
		t1   float64
	}{
		{"issue example", USL{F: 0.7, Sigma: 0.04, Kappa: 0.02}, 600},
		{"no crosstalk", USL{F: 0.95, Sigma: 0.01}, 120},
		{"pure Amdahl", USL{F: 0.9}, 1000},
		{"serial", USL{F: 0}, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var pts []Point
			for _, m := range []float64{1, 2, 3, 4, 6, 8, 16} {
				pts = append(pts, Point{M: m, Seconds: tt.t1 / tt.u.Speedup(m)})
			}
			got, t1, st, err := FitUSL(pts)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.F-tt.u.F) > 1e-6 || math.Abs(got.Sigma-tt.u.Sigma) > 1e-6 ||
				math.Abs(got.Kappa-tt.u.Kappa) > 1e-6 || math.Abs(t1-tt.t1) > 1e-6*tt.t1 {
				t.Fatalf("fit %+v t1 %g, want %+v t1 %g", got, t1, tt.u, tt.t1)
			}
			if st.RMSE > 1e-6*tt.t1 || st.Points != len(pts) {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestFitUSLConstrainsRanges(t *testing.T) {
	t.Parallel()
	// Superlinear measurements (time falls faster than 1/M) would need
	// negative contention; the fit stays in range.
	pts := []Point{{1, 100}, {2, 45}, {4, 20}, {8, 9}, {16, 4}}
	u, t1, _, err := FitUSL(pts)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Validate(); err != nil || t1 <= 0 {
		t.Fatalf("fit out of range: %+v t1 %g: %v", u, t1, err)
	}
	// Noisy measurements of a known law land near it.
	r := rand.New(rand.NewPCG(5, 6))
	truth := USL{F: 0.8, Sigma: 0.02, Kappa: 0.005}
	pts = nil
	for _, m := range []float64{1, 2, 4, 8, 12, 16, 24, 32} {
		for range 3 {
			pts = append(pts, Point{M: m, Seconds: 300 / truth.Speedup(m) * (1 + 0.01*r.NormFloat64())})
		}
	}
	u, _, st, err := FitUSL(pts)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(u.F-truth.F) > 0.05 || math.Abs(u.Sigma-truth.Sigma) > 0.01 || math.Abs(u.Kappa-truth.Kappa) > 0.001 || st.R2 < 0.99 {
		t.Fatalf("noisy fit %+v (%+v), truth %+v", u, st, truth)
	}
	if _, _, _, err := FitUSL(pts[:9]); !errors.Is(err, ErrPoints) {
		t.Fatalf("three distinct M: %v", err)
	}
}

func TestParsePoints(t *testing.T) {
	t.Parallel()
	pts, err := ParsePoints(strings.NewReader("# M seconds\n1 600\n\n2,350.5 # comment\r\n 4\t501\n"))
	if err != nil || len(pts) != 3 || pts[1] != (Point{2, 350.5}) {
		t.Fatalf("ParsePoints = %v, %v", pts, err)
	}
	for _, bad := range []string{"1", "1 2 3", "x 2", "0 5", "2 -1", "2 NaN", "2 Inf", "1e7 1", strings.Repeat("1", 5000) + " 2"} {
		if _, err := ParsePoints(strings.NewReader(bad)); !errors.Is(err, ErrPoints) {
			t.Errorf("ParsePoints(%.20q) = %v, want ErrPoints", bad, err)
		}
	}
}

func FuzzParsePoints(f *testing.F) {
	for _, s := range []string{"1 600\n2 350\n", "# c\n4,12\n", "1e3 1e-3", "x", "1 2 3", "\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pts, err := ParsePoints(strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, ErrPoints) {
				t.Fatalf("error %v does not match ErrPoints", err)
			}
			return
		}
		for _, p := range pts {
			if !(p.M >= 1 && p.M <= 1e6 && p.Seconds > 0 && !math.IsInf(p.Seconds, 0)) {
				t.Fatalf("accepted out-of-range point %+v", p)
			}
		}
		if len(pts) <= 64 {
			_, _, _, _ = FitUSL(pts)
		}
	})
}

func TestVoteWorkedExample(t *testing.T) {
	t.Parallel()
	r, err := Vote(5, 0.2, 0.4)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"majority indep", r.MajorityFailIndep, 0.0579},
		{"majority corr", r.MajorityFailCorr, 0.1667},
		{"unanimous indep", r.UnanimousFailIndep, 0.00032},
		{"unanimous corr", r.UnanimousFailCorr, 0.0392},
	} {
		if !sig3(c.got, c.want) {
			t.Errorf("%s = %.6g, want %.3g", c.name, c.got, c.want)
		}
	}
}

// betaBinomial computes P(X = k) directly from the Beta function, as an
// independent check of the recurrence in failures.
func betaBinomial(n, k int, alpha, beta float64) float64 {
	lb := func(a, b float64) float64 {
		x, _ := math.Lgamma(a)
		y, _ := math.Lgamma(b)
		z, _ := math.Lgamma(a + b)
		return x + y - z
	}
	lc, _ := math.Lgamma(float64(n + 1))
	l1, _ := math.Lgamma(float64(k + 1))
	l2, _ := math.Lgamma(float64(n - k + 1))
	return math.Exp(lc - l1 - l2 + lb(float64(k)+alpha, float64(n-k)+beta) - lb(alpha, beta))
}

func TestVoteDistributions(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		m, p, rho := 1+r.IntN(60), r.Float64(), r.Float64()
		pmf := failures(m, p, rho)
		sum := 0.0
		s := (1 - rho) / rho
		for k, v := range pmf {
			sum += v
			if want := betaBinomial(m, k, p*s, (1-p)*s); math.Abs(v-want) > 1e-9 {
				t.Fatalf("m %d p %g rho %g: P(%d) = %g, want %g", m, p, rho, k, v, want)
			}
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Fatalf("m %d p %g rho %g: pmf sums to %g", m, p, rho, sum)
		}
	}
	// Limits: rho 0 is the binomial, rho 1 makes every voter the same.
	v, _ := Vote(7, 0.3, 0)
	if v.MajorityFailCorr != v.MajorityFailIndep {
		t.Errorf("rho 0: %+v", v)
	}
	v, _ = Vote(7, 0.3, 1)
	if math.Abs(v.MajorityFailCorr-0.3) > 1e-15 || math.Abs(v.UnanimousFailCorr-0.3) > 1e-15 {
		t.Errorf("rho 1: %+v", v)
	}
	for _, bad := range []struct {
		m      int
		p, rho float64
		param  string
	}{{0, 0.1, 0.1, "m"}, {3, 1.1, 0.1, "p"}, {3, 0.1, -0.2, "rho"}} {
		var pe *ParamError
		if _, err := Vote(bad.m, bad.p, bad.rho); !errors.As(err, &pe) || pe.Param != bad.param {
			t.Errorf("Vote(%d, %g, %g) = %v, want ParamError for %s", bad.m, bad.p, bad.rho, err, bad.param)
		}
	}
}

// TestCorrelationNeverLowersMajorityFailure checks the claim on its
// domain: for p in [0, 0.5], every rho in [0, 1] and every M, correlated
// voters fail as a majority at least as often as independent ones. It is
// not true above 0.5: there, with an odd M, a majority vote beats a single
// voter and correlation (which turns the vote into a single voter) hurts
// less than independence helps.
func TestCorrelationNeverLowersMajorityFailure(t *testing.T) {
	t.Parallel()
	for m := 1; m <= 40; m++ {
		for pi := 0; pi <= 25; pi++ {
			p := float64(pi) / 50
			for ri := 0; ri <= 20; ri++ {
				v, err := Vote(m, p, float64(ri)/20)
				if err != nil {
					t.Fatal(err)
				}
				if v.MajorityFailCorr < v.MajorityFailIndep-1e-12 {
					t.Fatalf("M %d p %g rho %g: correlated %g < independent %g", m, p, v.Rho, v.MajorityFailCorr, v.MajorityFailIndep)
				}
			}
		}
	}
	// Outside the domain the claim fails.
	v, _ := Vote(3, 0.7, 0.9)
	if v.MajorityFailCorr >= v.MajorityFailIndep {
		t.Fatalf("p 0.7: correlated %g >= independent %g; the domain statement is not sharp", v.MajorityFailCorr, v.MajorityFailIndep)
	}
}

func TestFanout(t *testing.T) {
	t.Parallel()
	b, err := Barrier(10, 0.95)
	if err != nil || !sig3(b.P, 0.5987) {
		t.Errorf("barrier 10 at 0.95 = %+v, %v; want 0.599", b, err)
	}
	q, err := Quorum(8, 6, 0.9)
	if err != nil || !sig3(q.P, 0.9619) {
		t.Errorf("quorum 6 of 8 at 0.9 = %+v, %v; want 0.962", q, err)
	}
	for n := 1; n <= 30; n++ {
		b, _ := Barrier(n, 0.9)
		q, _ := Quorum(n, n, 0.9)
		one, _ := Quorum(n, 1, 0.9)
		if math.Abs(b.P-q.P) > 1e-12 || math.Abs(one.P-(1-math.Pow(0.1, float64(n)))) > 1e-12 {
			t.Fatalf("n %d: barrier %g, quorum n of n %g, 1 of n %g", n, b.P, q.P, one.P)
		}
	}
	var pe *ParamError
	if _, err := Quorum(8, 9, 0.9); !errors.As(err, &pe) || pe.Param != "k" {
		t.Errorf("k > n: %v", err)
	}
	if _, err := Barrier(3, 1.01); !errors.As(err, &pe) || pe.Param != "f" {
		t.Errorf("f > 1: %v", err)
	}
}

// bruteNoCollision enumerates every way n workers pick w of files files.
func bruteNoCollision(n, w, files int) float64 {
	var sets []uint32
	for s := uint32(0); s < 1<<files; s++ {
		if popcount(s) == w {
			sets = append(sets, s)
		}
	}
	ok := 0
	var rec func(i int, used uint32)
	rec = func(i int, used uint32) {
		if i == n {
			ok++
			return
		}
		for _, s := range sets {
			if used&s == 0 {
				rec(i+1, used|s)
			}
		}
	}
	rec(0, 0)
	return float64(ok) / float64(pow(len(sets), n))
}

func popcount(x uint32) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

func pow(b, e int) int {
	r := 1
	for range e {
		r *= b
	}
	return r
}

func TestCollisionUniformExact(t *testing.T) {
	t.Parallel()
	for _, c := range [][3]int{{2, 1, 5}, {3, 2, 6}, {3, 2, 8}, {4, 1, 6}, {2, 3, 7}, {3, 3, 8}} {
		r, err := CollisionUniform(c[0], c[1], c[2])
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteNoCollision(c[0], c[1], c[2]); math.Abs(r.PNoCollision-want) > 1e-12 {
			t.Errorf("n %d w %d files %d: %g, brute force %g", c[0], c[1], c[2], r.PNoCollision, want)
		}
	}
	// The closed form approximates the exact value when collisions are rare.
	r, _ := CollisionUniform(10, 5, 100_000)
	if math.Abs(r.PNoCollision-*r.PApprox) > 1e-3 || r.Method != "exact" {
		t.Errorf("exact %g vs approx %g", r.PNoCollision, *r.PApprox)
	}
	// Pigeonhole.
	if r, _ := CollisionUniform(5, 3, 14); r.PNoCollision != 0 {
		t.Errorf("15 files wanted of 14: %g", r.PNoCollision)
	}
	// The two evaluation paths agree.
	for _, c := range [][3]int{{50, 20, 100_000}, {300, 10, 1_000_000}, {10, 1000, 20_000}} {
		a, b := logNoCollision(c[0], c[1], c[2], false), logNoCollision(c[0], c[1], c[2], true)
		if math.Abs(a-b) > 1e-6*max(1, math.Abs(a)) {
			t.Errorf("%v: log1p path %g, lgamma path %g", c, a, b)
		}
	}
	var pe *ParamError
	if _, err := CollisionUniform(3, 11, 10); !errors.As(err, &pe) || pe.Param != "w" {
		t.Errorf("w > files: %v", err)
	}
}

func TestCollisionZipf(t *testing.T) {
	t.Parallel()
	exact, _ := CollisionUniform(8, 3, 200)
	uni, err := CollisionZipf(rand.New(rand.NewPCG(1, 1)), 8, 3, 200, 0, 20_000)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(uni.PNoCollision-exact.PNoCollision) > 4.5**uni.StdErr {
		t.Errorf("zipf 0 estimate %g ± %g, exact %g", uni.PNoCollision, *uni.StdErr, exact.PNoCollision)
	}
	skew, err := CollisionZipf(rand.New(rand.NewPCG(1, 1)), 8, 3, 200, 1.2, 20_000)
	if err != nil {
		t.Fatal(err)
	}
	if skew.PNoCollision >= uni.PNoCollision-4.5*(*skew.StdErr+*uni.StdErr) || skew.Method != "monte_carlo" {
		t.Errorf("skewed popularity %g should collide more than uniform %g", skew.PNoCollision, uni.PNoCollision)
	}
	again, _ := CollisionZipf(rand.New(rand.NewPCG(1, 1)), 8, 3, 200, 1.2, 20_000)
	if again.PNoCollision != skew.PNoCollision {
		t.Errorf("same seed, different estimate: %g vs %g", again.PNoCollision, skew.PNoCollision)
	}
	var pe *ParamError
	if _, err := CollisionZipf(rand.New(rand.NewPCG(1, 1)), 2, 5, 6, 15, 10); !errors.As(err, &pe) || pe.Param != "zipf" {
		t.Errorf("too skewed for w distinct files: %v", err)
	}
}
