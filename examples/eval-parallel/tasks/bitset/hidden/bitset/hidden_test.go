package bitset

import (
	"math/rand"
	"slices"
	"testing"
)

func TestHiddenAgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for round := 0; round < 50; round++ {
		var a, b Set
		inA, inB := map[int]bool{}, map[int]bool{}
		for i := 0; i < rng.Intn(40); i++ {
			x := rng.Intn(70 + 200*(round%3))
			a.Add(x)
			inA[x] = true
		}
		for i := 0; i < rng.Intn(40); i++ {
			x := rng.Intn(130)
			b.Add(x)
			inB[x] = true
		}
		var union, inter []int
		for x := 0; x < 1000; x++ {
			if inA[x] || inB[x] {
				union = append(union, x)
			}
			if inA[x] && inB[x] {
				inter = append(inter, x)
			}
		}
		beforeA, beforeB := a.Members(), b.Members()
		if got := a.Union(&b).Members(); !slices.Equal(got, union) {
			t.Fatalf("Union = %v, want %v", got, union)
		}
		if got := b.Intersect(&a).Members(); !slices.Equal(got, inter) {
			t.Fatalf("Intersect = %v, want %v", got, inter)
		}
		if a.Count() != len(inA) || b.Count() != len(inB) {
			t.Fatalf("Count = %d, %d; want %d, %d", a.Count(), b.Count(), len(inA), len(inB))
		}
		if !slices.Equal(a.Members(), beforeA) || !slices.Equal(b.Members(), beforeB) {
			t.Fatal("Union or Intersect changed an operand")
		}
	}
}

func TestHiddenZeroSets(t *testing.T) {
	var z Set
	one := New(0)
	one.Add(100)
	if z.Count() != 0 || len(z.Members()) != 0 {
		t.Fatal("the zero Set has members")
	}
	if got := z.Union(one).Members(); !slices.Equal(got, []int{100}) {
		t.Errorf("zero ∪ {100} = %v", got)
	}
	if got := one.Intersect(&z).Members(); len(got) != 0 {
		t.Errorf("{100} ∩ zero = %v", got)
	}
}
