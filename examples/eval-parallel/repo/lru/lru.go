// Package lru is a cache of fixed capacity that evicts the entry used least
// recently.
//
// A Cache is not safe for concurrent use.
package lru

import "container/list"

// Cache maps keys to values and holds at most Cap() entries.
type Cache[K comparable, V any] struct {
	capacity int
	order    *list.List // front: most recently used; elements hold *entry
	items    map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key   K
	value V
}

// New returns an empty cache of the given capacity. It panics if capacity
// is less than 1.
func New[K comparable, V any](capacity int) *Cache[K, V] {
	if capacity < 1 {
		panic("lru: capacity must be at least 1")
	}
	return &Cache[K, V]{capacity: capacity, order: list.New(), items: map[K]*list.Element{}}
}

// Len is the number of entries held.
func (c *Cache[K, V]) Len() int { return c.order.Len() }

// Cap is the most entries the cache holds.
func (c *Cache[K, V]) Cap() int { return c.capacity }

// Get returns the value of key and marks it as used most recently.
func (c *Cache[K, V]) Get(key K) (v V, ok bool) {
	el, ok := c.items[key]
	if !ok {
		return v, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry[K, V]).value, true
}

// Put sets the value of key and marks it as used most recently. When the
// cache is full and key is new, the least recently used entry is evicted
// first; Put reports its key and whether that happened.
func (c *Cache[K, V]) Put(key K, value V) (evicted K, ok bool) {
	if el, found := c.items[key]; found {
		el.Value.(*entry[K, V]).value = value
		c.order.MoveToFront(el)
		return evicted, false
	}
	if c.order.Len() >= c.capacity {
		evicted, ok = c.evictOldest()
	}
	c.items[key] = c.order.PushFront(&entry[K, V]{key: key, value: value})
	return evicted, ok
}

// evictOldest removes the least recently used entry.
func (c *Cache[K, V]) evictOldest() (key K, ok bool) {
	el := c.order.Back()
	if el == nil {
		return key, false
	}
	e := c.order.Remove(el).(*entry[K, V])
	delete(c.items, e.key)
	return e.key, true
}
