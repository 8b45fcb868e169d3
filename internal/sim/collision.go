package sim

import (
	"math"
	"math/rand/v2"
	"slices"
)

// CollisionReport is the answer of `apiary sim collision`: the probability
// that N workers, each writing W distinct files out of Files, write disjoint
// sets (no two workers touch the same file).
type CollisionReport struct {
	N     int      `json:"n"`
	W     int      `json:"w"`
	Files int      `json:"files"`
	Zipf  *float64 `json:"zipf,omitempty"` // exponent s; absent for uniform
	// PNoCollision is the exact probability (uniform) or the Monte Carlo
	// estimate (Zipf); Method says which.
	PNoCollision float64 `json:"p_no_collision"`
	Method       string  `json:"method"` // "exact" or "monte_carlo"
	// PApprox is the closed form exp(−N(N−1)W²/(2·Files)) (uniform only).
	PApprox *float64 `json:"p_approx,omitempty"`
	// Monte Carlo only: trials, seed and the standard error of the estimate.
	Trials int      `json:"trials,omitempty"`
	Seed   *uint64  `json:"seed,omitempty"`
	StdErr *float64 `json:"std_err,omitempty"`
}

const maxFiles = 10_000_000

func checkCollision(n, w, files int) error {
	if n < 1 || n > maxVoters {
		return paramErr("n", n, "in [1, 1000000]")
	}
	if files < 1 || files > maxFiles {
		return paramErr("files", files, "in [1, 10000000]")
	}
	if w < 1 || w > files {
		return paramErr("w", w, "in [1, files]")
	}
	return nil
}

// CollisionUniform computes the probability exactly for files chosen
// uniformly at random: worker i+1 must avoid the i·w files already taken,
// so P = Π_{i=1}^{n−1} C(files−i·w, w)/C(files, w). PApprox carries the
// closed-form approximation.
func CollisionUniform(n, w, files int) (CollisionReport, error) {
	if err := checkCollision(n, w, files); err != nil {
		return CollisionReport{}, err
	}
	r := CollisionReport{N: n, W: w, Files: files, Method: "exact"}
	fn, fw, fm := float64(n), float64(w), float64(files)
	approx := math.Exp(-fn * (fn - 1) * fw * fw / (2 * fm))
	r.PApprox = &approx
	if int64(n)*int64(w) > int64(files) {
		return r, nil // pigeonhole: some file is shared
	}
	r.PNoCollision = math.Exp(logNoCollision(n, w, files, int64(n)*int64(w) > 4_000_000))
	return r, nil
}

// logNoCollision returns log Π_{i=1}^{n−1} C(files−i·w, w)/C(files, w) for
// n·w <= files: term by term as Σ log1p(−i·w/(files−j)), which is accurate,
// or through log-gamma when that would take too many terms.
func logNoCollision(n, w, files int, viaLgamma bool) float64 {
	fw, fm := float64(w), float64(files)
	logP := 0.0
	if !viaLgamma {
		for i := 1; i < n; i++ {
			for j := range w {
				logP += math.Log1p(-float64(i*w) / (fm - float64(j)))
			}
		}
		return logP
	}
	lg := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
	lchoose := func(a float64) float64 { return lg(a+1) - lg(a-fw+1) }
	base := lchoose(fm)
	for i := 1; i < n; i++ {
		logP += lchoose(fm-float64(i)*fw) - base
	}
	return logP
}

// CollisionZipf estimates the probability by Monte Carlo when file
// popularity follows Zipf's law with exponent s >= 0 (file of rank r is
// drawn with weight r^−s; s = 0 is uniform): each worker draws files until
// it holds w distinct ones. rng is the only source of randomness.
func CollisionZipf(rng *rand.Rand, n, w, files int, s float64, trials int) (CollisionReport, error) {
	if err := checkCollision(n, w, files); err != nil {
		return CollisionReport{}, err
	}
	if !(s >= 0 && s <= 20) {
		return CollisionReport{}, paramErr("zipf", s, "in [0, 20]")
	}
	if trials < 1 || trials > 100_000_000 {
		return CollisionReport{}, paramErr("trials", trials, "in [1, 1e8]")
	}
	r := CollisionReport{N: n, W: w, Files: files, Zipf: &s, Method: "monte_carlo", Trials: trials}
	cdf := make([]float64, files)
	total := 0.0
	for i := range files {
		total += math.Pow(float64(i+1), -s)
		cdf[i] = total
	}
	// Drawing w distinct files by rejection stalls when the w most popular
	// files carry nearly all the weight; give up rather than spin.
	top := 0.0
	if w > 1 {
		top = cdf[w-2] / total
	}
	if top > 0.999 {
		return CollisionReport{}, paramErr("zipf", s, "small enough that w distinct files can be drawn")
	}
	owner := make([]int32, files)  // worker index+1 that holds each file in this trial
	stamp := make([]uint32, files) // trial+1 in which owner was written
	ok := 0
	for t := range trials {
		ok += trial(rng, cdf, total, n, w, owner, stamp, uint32(t+1))
	}
	p := float64(ok) / float64(trials)
	se := math.Sqrt(p * (1 - p) / float64(trials))
	r.PNoCollision, r.StdErr = p, &se
	return r, nil
}

// trial runs one draw of all workers and returns 1 if no file is shared.
func trial(rng *rand.Rand, cdf []float64, total float64, n, w int, owner []int32, stamp []uint32, tag uint32) int {
	for worker := int32(1); worker <= int32(n); worker++ {
		for held := 0; held < w; {
			f, _ := slices.BinarySearch(cdf, rng.Float64()*total)
			f = min(f, len(cdf)-1)
			if stamp[f] == tag {
				if owner[f] != worker {
					return 0
				}
				continue // already holds it: draw again
			}
			stamp[f], owner[f] = tag, worker
			held++
		}
	}
	return 1
}
