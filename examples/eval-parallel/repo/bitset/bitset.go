// Package bitset is a set of small non-negative integers, one bit each.
//
// The zero Set is empty and ready to use; it grows as members are added.
// A Set is not safe for concurrent use.
package bitset

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
