package ring

import (
	"slices"
	"testing"
)

func TestPeekOverwriteGrow(t *testing.T) {
	b := New[string](2)
	b.Push("a")
	b.Push("b")
	if v, ok := b.Peek(1); !ok || v != "b" {
		t.Fatalf("Peek(1) = %q, %v", v, ok)
	}
	if _, ok := b.Peek(2); ok {
		t.Fatal("Peek(2) on two values succeeded")
	}
	if ev, ok := b.PushOverwrite("c"); !ok || ev != "a" {
		t.Fatalf("PushOverwrite evicted %q, %v; want a", ev, ok)
	}
	b.Grow(2)
	b.Push("d")
	if got := b.Slice(); !slices.Equal(got, []string{"b", "c", "d"}) || b.Cap() != 4 {
		t.Fatalf("after Grow: %v, cap %d", got, b.Cap())
	}
}
