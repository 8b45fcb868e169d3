package bitset

import "testing"

func TestAddRemoveHas(t *testing.T) {
	var s Set
	if !s.Empty() {
		t.Fatal("the zero Set is not empty")
	}
	for _, i := range []int{0, 5, 63, 64, 200} {
		s.Add(i)
	}
	for _, i := range []int{0, 5, 63, 64, 200} {
		if !s.Has(i) {
			t.Errorf("Has(%d) = false", i)
		}
	}
	if s.Has(1) || s.Has(-1) || s.Has(1000) {
		t.Error("Has reports a non-member")
	}
	s.Remove(64)
	s.Remove(9999)
	if s.Has(64) {
		t.Error("Remove(64) left it")
	}
}
