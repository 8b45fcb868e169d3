package lru

import "testing"

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	c := New[string, int](2)
	c.Put("a", 1)
	c.Put("b", 2)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("Get(a) = %d, %v", v, ok)
	}
	if k, ok := c.Put("c", 3); !ok || k != "b" {
		t.Fatalf("Put(c) evicted %q, %v; want b", k, ok)
	}
	if _, ok := c.Get("b"); ok {
		t.Fatal("b is still cached")
	}
	if c.Len() != 2 || c.Cap() != 2 {
		t.Fatalf("len %d cap %d", c.Len(), c.Cap())
	}
	if _, ok := c.Put("a", 10); ok {
		t.Fatal("updating a key evicted something")
	}
	if v, _ := c.Get("a"); v != 10 {
		t.Fatalf("a = %d after the update", v)
	}
}
