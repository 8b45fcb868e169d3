// Package ring is a first-in, first-out buffer of fixed capacity, stored in
// one slice that wraps around.
//
// The zero Buffer has no capacity; use New. A Buffer is not safe for
// concurrent use.
package ring

// Buffer holds at most Cap() values, oldest first.
type Buffer[T any] struct {
	data []T
	head int // index of the oldest value
	n    int // number of values held
}

// New returns an empty buffer that holds up to capacity values. It panics
// if capacity is negative.
func New[T any](capacity int) *Buffer[T] {
	if capacity < 0 {
		panic("ring: negative capacity")
	}
	return &Buffer[T]{data: make([]T, capacity)}
}

// Len is the number of values held.
func (b *Buffer[T]) Len() int { return b.n }

// Cap is the most values the buffer can hold.
func (b *Buffer[T]) Cap() int { return len(b.data) }

// Full reports whether Push would fail.
func (b *Buffer[T]) Full() bool { return b.n == len(b.data) }

// index maps the i-th oldest value (0 is the oldest) to its slot.
func (b *Buffer[T]) index(i int) int { return (b.head + i) % len(b.data) }

// Push appends v as the newest value. It reports false, and changes
// nothing, when the buffer is full.
func (b *Buffer[T]) Push(v T) bool {
	if b.Full() {
		return false
	}
	b.data[b.index(b.n)] = v
	b.n++
	return true
}

// Pop removes and returns the oldest value; ok is false when the buffer is
// empty.
func (b *Buffer[T]) Pop() (v T, ok bool) {
	if b.n == 0 {
		return v, false
	}
	v = b.data[b.head]
	var zero T
	b.data[b.head] = zero // let the value be collected
	b.head = (b.head + 1) % len(b.data)
	b.n--
	return v, true
}

// Slice returns the values held, oldest first, in a new slice.
func (b *Buffer[T]) Slice() []T {
	out := make([]T, 0, b.n)
	for i := 0; i < b.n; i++ {
		out = append(out, b.data[b.index(i)])
	}
	return out
}

// Reset empties the buffer, keeping its capacity.
func (b *Buffer[T]) Reset() {
	var zero T
	for i := range b.data {
		b.data[i] = zero
	}
	b.head, b.n = 0, 0
}

// Peek returns the i-th oldest value (0 is the oldest) without removing
// it; ok is false when i is out of range.
func (b *Buffer[T]) Peek(i int) (v T, ok bool) {
	if i < 0 || i >= b.n {
		return v, false
	}
	return b.data[b.index(i)], true
}

// PushOverwrite appends v as the newest value; on a full buffer it first
// drops the oldest value and returns it with ok true. A buffer of capacity
// 0 stores nothing: v itself is dropped.
func (b *Buffer[T]) PushOverwrite(v T) (evicted T, ok bool) {
	if len(b.data) == 0 {
		return v, true
	}
	if b.Full() {
		evicted, ok = b.Pop()
	}
	b.Push(v)
	return evicted, ok
}

// Grow adds room for n more values, keeping the values held and their
// order. It panics if n is negative.
func (b *Buffer[T]) Grow(n int) {
	if n < 0 {
		panic("ring: negative growth")
	}
	data := make([]T, len(b.data)+n)
	for i := 0; i < b.n; i++ {
		data[i] = b.data[b.index(i)]
	}
	b.data, b.head = data, 0
}
