package swarm

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestFirstN(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	less := func(a, b int) bool { return a < b }
	for range 500 {
		xs := make([]int, rng.IntN(200))
		for i := range xs {
			xs[i] = rng.IntN(50) // duplicates too
		}
		n := rng.IntN(60) - 5
		want := slices.Clone(xs)
		slices.Sort(want)
		want = want[:max(min(n, len(want)), 0)]
		got := firstN(slices.Clone(xs), n, less)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("firstN(%v, %d) = %v, want %v", xs, n, got, want)
		}
	}
}
