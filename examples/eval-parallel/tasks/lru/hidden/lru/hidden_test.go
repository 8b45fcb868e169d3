package lru

import (
	"slices"
	"testing"
)

func TestHiddenPeekKeepsOrder(t *testing.T) {
	c := New[int, string](2)
	c.Put(1, "one")
	c.Put(2, "two")
	if v, ok := c.Peek(1); !ok || v != "one" {
		t.Fatalf("Peek(1) = %q, %v", v, ok)
	}
	if k, ok := c.Put(3, "three"); !ok || k != 1 {
		t.Fatalf("Put(3) evicted %d, %v; want 1 (Peek must not count as a use)", k, ok)
	}
	if _, ok := c.Peek(1); ok {
		t.Fatal("Peek found the evicted key")
	}
	if !c.Remove(2) || c.Remove(2) || c.Remove(42) {
		t.Fatal("Remove reported wrongly")
	}
	if c.Len() != 1 || !slices.Equal(c.Keys(), []int{3}) {
		t.Fatalf("after Remove: len %d keys %v", c.Len(), c.Keys())
	}
}

func TestHiddenResize(t *testing.T) {
	c := New[string, int](4)
	for i, k := range []string{"a", "b", "c", "d"} {
		c.Put(k, i)
	}
	c.Get("a")
	if got := c.Keys(); !slices.Equal(got, []string{"a", "d", "c", "b"}) {
		t.Fatalf("Keys = %v", got)
	}
	if n := c.Resize(2); n != 2 {
		t.Fatalf("Resize(2) evicted %d, want 2", n)
	}
	if got := c.Keys(); !slices.Equal(got, []string{"a", "d"}) {
		t.Fatalf("after Resize(2): %v", got)
	}
	if n := c.Resize(5); n != 0 || c.Cap() != 5 {
		t.Fatalf("Resize(5) evicted %d, cap %d", n, c.Cap())
	}
	c.Put("e", 5)
	c.Put("f", 6)
	c.Put("g", 7)
	if c.Len() != 5 {
		t.Fatalf("len %d after growing to 5", c.Len())
	}
	defer func() {
		if recover() == nil {
			t.Error("Resize(0) did not panic")
		}
	}()
	c.Resize(0)
}
