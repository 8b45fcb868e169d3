package board

import (
	"slices"
	"testing"
)

func TestIntentOverlap(t *testing.T) {
	t.Parallel()
	file := func(paths ...string) Intent { return Intent{Scope: ScopeFile, Files: paths} }
	dir := func(paths ...string) Intent { return Intent{Scope: ScopeDir, Files: paths} }
	repo := Intent{Scope: ScopeRepo}
	for _, tc := range []struct {
		name string
		a, b Intent
		want []string
	}{
		{"same file", file("a/x.go"), file("a/x.go"), []string{"a/x.go"}},
		{"different files", file("a/x.go"), file("a/y.go"), nil},
		{"cleaned paths meet", file("./a//x.go"), file("a/b/../x.go"), []string{"a/x.go"}},
		{"file in dir scope", file("a/b/x.go"), dir("a/y.go"), []string{"a/b/x.go", "a/y.go"}},
		{"file beside a sibling dir", file("ab/x.go"), dir("a/y.go"), nil},
		{"nested dirs", dir("a/b/c/x.go"), dir("a/y.go"), []string{"a/b/c/x.go", "a/y.go"}},
		{"disjoint dirs", dir("a/x.go"), dir("b/y.go"), nil},
		{"root file in dir scope covers all", dir("go.mod"), file("deep/in/x.go"), []string{"deep/in/x.go", "go.mod"}},
		{"repo scope", repo, file("a/x.go"), []string{".", "a/x.go"}},
		{"repo vs empty file intent", repo, file(), nil},
		{"several pairs", file("a", "b", "c"), file("c", "b"), []string{"b", "c"}},
	} {
		got := tc.a.Overlap(tc.b)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: Overlap = %v, want %v", tc.name, got, tc.want)
		}
		if back := tc.b.Overlap(tc.a); !slices.Equal(back, got) {
			t.Errorf("%s: Overlap not symmetric: %v vs %v", tc.name, got, back)
		}
	}
}

// FuzzIntentOverlap checks overlap's invariants on arbitrary paths: it is
// symmetric, an intent overlaps itself unless empty, and widening a scope
// never removes an overlap.
func FuzzIntentOverlap(f *testing.F) {
	f.Add("a/b.go", "a/c.go", uint8(0), uint8(1))
	f.Add("../x", "/x", uint8(0), uint8(0))
	f.Add("", ".", uint8(2), uint8(1))
	scopes := []Scope{ScopeFile, ScopeDir, ScopeRepo}
	f.Fuzz(func(t *testing.T, p, q string, sa, sb uint8) {
		a := Intent{Scope: scopes[int(sa)%3], Files: []string{p}}
		b := Intent{Scope: scopes[int(sb)%3], Files: []string{q}}
		ab, ba := a.Overlap(b), b.Overlap(a)
		if !slices.Equal(ab, ba) {
			t.Fatalf("asymmetric: %v vs %v", ab, ba)
		}
		if a.Overlap(a) == nil {
			t.Fatalf("%+v does not overlap itself", a)
		}
		if ab != nil {
			for _, wider := range scopes[a.Scope.rank():] {
				w := a
				w.Scope = wider
				if w.Overlap(b) == nil {
					t.Fatalf("widening %+v to %s lost its overlap with %+v", a, wider, b)
				}
			}
		}
	})
}

func (s Scope) rank() int { return slices.Index([]Scope{ScopeFile, ScopeDir, ScopeRepo}, s) }

func TestCmpHolds(t *testing.T) {
	t.Parallel()
	kv := KV{Key: "k", CreateRevision: 3, ModRevision: 7}
	for _, tc := range []struct {
		c    Cmp
		kv   KV
		want bool
	}{
		{Absent("k"), KV{}, true},
		{Absent("k"), kv, false},
		{CreatedAt("k", 3), kv, true},
		{CreatedAt("k", 7), kv, false},
		{ModifiedAt("k", 7), kv, true},
		{ModifiedAt("k", 0), KV{}, true},
		{Cmp{Key: "k", Revision: 3}, kv, false}, // no target
	} {
		if got := tc.c.Holds(tc.kv); got != tc.want {
			t.Errorf("%+v.Holds(%+v) = %v, want %v", tc.c, tc.kv, got, tc.want)
		}
	}
}

func TestConflictIDStable(t *testing.T) {
	t.Parallel()
	a := conflictID(Conflict{Type: "t", Tasks: []string{"x", "y"}, Files: []string{"f", "g"}})
	b := conflictID(Conflict{Type: "t", Tasks: []string{"y", "x"}, Files: []string{"g", "f"}, Resolution: "ignored"})
	c := conflictID(Conflict{Type: "u", Tasks: []string{"x", "y"}, Files: []string{"f", "g"}})
	if a != b || a == c || len(a) != 16 {
		t.Fatalf("conflict ids: %s %s %s; want the first two equal, the third different", a, b, c)
	}
}
