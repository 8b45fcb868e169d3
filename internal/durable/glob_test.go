package durable

import (
	"strings"
	"testing"
)

// TestGlobMatchLong: the matcher on 25- and 60-segment paths with up to 16
// "**" gives the right answers (the previous backtracking matcher needed
// 228 ms for eight "**" against 25 segments, and exponentially more per
// further "**").
func TestGlobMatchLong(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		glob, path string
		want       bool
	}{
		{strings.Repeat("**/", 8) + "x.go", strings.Repeat("a/", 24) + "y.go", false},
		{strings.Repeat("**/", 16) + "x.go", strings.Repeat("a/", 59) + "y.go", false},
		{strings.Repeat("**/a/", 12) + "x.go", strings.Repeat("a/", 24) + "x.go", true},
		{strings.Repeat("**/a/", 30) + "x.go", strings.Repeat("a/", 24) + "x.go", false},
		{"**", strings.Repeat("a/", 24) + "b", true},
		{"**/*.go", "a/b/c.go", true},
		{"*.go", "a/c.go", false},
	} {
		if got := globMatch(tc.glob, tc.path); got != tc.want {
			t.Fatalf("globMatch(%q, %q) = %v", tc.glob, tc.path, got)
		}
	}
}

// BenchmarkGlobPathological is the case the old matcher took 228 ms for.
func BenchmarkGlobPathological(b *testing.B) {
	glob, p := strings.Repeat("**/", 8)+"x.go", strings.Repeat("a/", 24)+"y.go"
	for b.Loop() {
		globMatch(glob, p)
	}
}
