package bitset

import (
	"slices"
	"testing"
)

func TestCountUnionIntersect(t *testing.T) {
	a, b := New(10), New(300)
	for _, i := range []int{1, 3, 5} {
		a.Add(i)
	}
	for _, i := range []int{3, 5, 250} {
		b.Add(i)
	}
	if a.Count() != 3 {
		t.Fatalf("Count = %d", a.Count())
	}
	if got := a.Union(b).Members(); !slices.Equal(got, []int{1, 3, 5, 250}) {
		t.Errorf("Union = %v", got)
	}
	if got := a.Intersect(b).Members(); !slices.Equal(got, []int{3, 5}) {
		t.Errorf("Intersect = %v", got)
	}
}
