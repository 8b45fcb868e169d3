package lru

import (
	"slices"
	"testing"
)

func TestPeekRemoveKeysResize(t *testing.T) {
	c := New[string, int](3)
	c.Put("a", 1)
	c.Put("b", 2)
	c.Put("c", 3)
	if v, ok := c.Peek("a"); !ok || v != 1 {
		t.Fatalf("Peek(a) = %d, %v", v, ok)
	}
	if got := c.Keys(); !slices.Equal(got, []string{"c", "b", "a"}) {
		t.Fatalf("Keys = %v (Peek must not mark a as used)", got)
	}
	if !c.Remove("b") || c.Remove("b") {
		t.Fatal("Remove(b) twice")
	}
	if n := c.Resize(1); n != 1 || c.Len() != 1 || c.Cap() != 1 {
		t.Fatalf("Resize(1) evicted %d, len %d", n, c.Len())
	}
}
