// Package bitset is a set of small non-negative integers, one bit each.
//
// The zero Set is empty and ready to use; it grows as members are added.
// A Set is not safe for concurrent use.
package bitset

import "math/bits"

// Set is a set of non-negative integers.
type Set struct {
	words []uint64
}

// New returns a set with room for the integers below n without growing.
func New(n int) *Set {
	return &Set{words: make([]uint64, (max(n, 0)+63)/64)}
}

// Add puts i in the set. It panics if i is negative.
func (s *Set) Add(i int) {
	if i < 0 {
		panic("bitset: negative member")
	}
	w := i / 64
	for len(s.words) <= w {
		s.words = append(s.words, 0)
	}
	s.words[w] |= 1 << (uint(i) % 64)
}

// Remove takes i out of the set.
func (s *Set) Remove(i int) {
	if i < 0 || i/64 >= len(s.words) {
		return
	}
	s.words[i/64] &^= 1 << (uint(i) % 64)
}

// Has reports whether i is in the set.
func (s *Set) Has(i int) bool {
	if i < 0 || i/64 >= len(s.words) {
		return false
	}
	return s.words[i/64]&(1<<(uint(i)%64)) != 0
}

// Empty reports whether the set has no members.
func (s *Set) Empty() bool {
	for _, w := range s.words {
		if w != 0 {
			return false
		}
	}
	return true
}

// Count is the number of members.
func (s *Set) Count() int {
	n := 0
	for _, w := range s.words {
		n += bits.OnesCount64(w)
	}
	return n
}

// Union returns a new set of the members of s or t.
func (s *Set) Union(t *Set) *Set {
	long, short := s.words, t.words
	if len(short) > len(long) {
		long, short = short, long
	}
	out := &Set{words: append([]uint64(nil), long...)}
	for i, w := range short {
		out.words[i] |= w
	}
	return out
}

// Intersect returns a new set of the members of both s and t.
func (s *Set) Intersect(t *Set) *Set {
	out := &Set{words: make([]uint64, min(len(s.words), len(t.words)))}
	for i := range out.words {
		out.words[i] = s.words[i] & t.words[i]
	}
	return out
}

// Members returns the members in ascending order.
func (s *Set) Members() []int {
	var out []int
	for i, w := range s.words {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			out = append(out, i*64+b)
			w &= w - 1
		}
	}
	return out
}
