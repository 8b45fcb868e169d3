package board

import (
	"slices"
	"testing"
)

func TestFairShares(t *testing.T) {
	t.Parallel()
	cases := []struct {
		limit   int64
		demands []int64
		want    []int64
	}{
		{100, nil, []int64{}},
		{100, []int64{0, 0}, []int64{5, 5}},             // floors only; the rest stays free
		{100, []int64{90, 10}, []int64{90, 10}},         // both served
		{100, []int64{200, 10}, []int64{90, 10}},        // the small one first, the big one takes the rest
		{100, []int64{200, 200}, []int64{50, 50}},       // equal split
		{100, []int64{200, 200, 1}, []int64{48, 49, 3}}, // floor 3 each; the remainder goes last
		{2, []int64{9, 9, 9}, []int64{0, 1, 1}},         // fewer units than members
		{10, []int64{9, 9, 9}, []int64{3, 3, 4}},
	}
	for _, c := range cases {
		got := FairShares(c.limit, c.demands)
		var sum int64
		for _, g := range got {
			sum += g
		}
		if sum > c.limit {
			t.Errorf("FairShares(%d, %v) = %v: sum %d over the limit", c.limit, c.demands, got, sum)
		}
		if c.want != nil && !slices.Equal(got, c.want) {
			t.Errorf("FairShares(%d, %v) = %v, want %v", c.limit, c.demands, got, c.want)
		}
	}
}

func FuzzFairShares(f *testing.F) {
	f.Add(int64(100), int64(5), int64(90), int64(0))
	f.Add(int64(3), int64(1), int64(1), int64(1))
	f.Fuzz(func(t *testing.T, limit, a, b, c int64) {
		if limit < 0 || limit > 1<<40 || a < 0 || b < 0 || c < 0 || a > 1<<40 || b > 1<<40 || c > 1<<40 {
			t.Skip()
		}
		got := FairShares(limit, []int64{a, b, c})
		var sum int64
		for _, g := range got {
			if g < 0 {
				t.Fatalf("negative share %v", got)
			}
			sum += g
		}
		if sum > limit {
			t.Fatalf("FairShares(%d, %d %d %d) = %v sums to %d", limit, a, b, c, got, sum)
		}
	})
}
