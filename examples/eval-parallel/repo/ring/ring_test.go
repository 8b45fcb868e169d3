package ring

import (
	"slices"
	"testing"
)

func TestPushPop(t *testing.T) {
	b := New[int](3)
	for i := 1; i <= 3; i++ {
		if !b.Push(i) {
			t.Fatalf("Push(%d) failed on a buffer of %d/%d", i, b.Len(), b.Cap())
		}
	}
	if b.Push(4) || !b.Full() {
		t.Fatal("Push on a full buffer succeeded")
	}
	if v, ok := b.Pop(); !ok || v != 1 {
		t.Fatalf("Pop = %d, %v; want 1, true", v, ok)
	}
	b.Push(4) // wraps around
	if got := b.Slice(); !slices.Equal(got, []int{2, 3, 4}) {
		t.Fatalf("Slice = %v, want [2 3 4]", got)
	}
	b.Reset()
	if _, ok := b.Pop(); ok || b.Len() != 0 || b.Cap() != 3 {
		t.Fatalf("after Reset: len %d cap %d", b.Len(), b.Cap())
	}
}
