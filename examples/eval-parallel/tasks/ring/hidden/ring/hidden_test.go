package ring

import (
	"slices"
	"testing"
)

func TestHiddenPeekOverwrite(t *testing.T) {
	b := New[int](3)
	for i := 1; i <= 5; i++ {
		ev, ok := b.PushOverwrite(i)
		if wantOK := i > 3; ok != wantOK || (ok && ev != i-3) {
			t.Fatalf("PushOverwrite(%d) = %d, %v", i, ev, ok)
		}
	}
	for i, want := range []int{3, 4, 5} {
		if v, ok := b.Peek(i); !ok || v != want {
			t.Errorf("Peek(%d) = %d, %v; want %d", i, v, ok, want)
		}
	}
	for _, i := range []int{-1, 3} {
		if _, ok := b.Peek(i); ok {
			t.Errorf("Peek(%d) succeeded", i)
		}
	}
	z := New[int](0)
	if ev, ok := z.PushOverwrite(7); !ok || ev != 7 || z.Len() != 0 {
		t.Errorf("capacity 0: PushOverwrite = %d, %v, len %d", ev, ok, z.Len())
	}
}

func TestHiddenGrowAfterWrap(t *testing.T) {
	b := New[int](4)
	for i := 0; i < 4; i++ {
		b.Push(i)
	}
	b.Pop()
	b.Pop()
	b.Push(4)
	b.Push(5) // the values now wrap around the slice's end
	b.Grow(3)
	for i := 6; i < 9; i++ {
		if !b.Push(i) {
			t.Fatalf("Push(%d) after Grow(3) failed: len %d cap %d", i, b.Len(), b.Cap())
		}
	}
	if got := b.Slice(); !slices.Equal(got, []int{2, 3, 4, 5, 6, 7, 8}) || b.Cap() != 7 {
		t.Fatalf("after Grow: %v cap %d", got, b.Cap())
	}
	defer func() {
		if recover() == nil {
			t.Error("Grow(-1) did not panic")
		}
	}()
	b.Grow(-1)
}
