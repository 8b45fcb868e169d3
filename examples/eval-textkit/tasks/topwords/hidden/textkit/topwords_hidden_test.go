package textkit

import (
	"slices"
	"testing"
)

func TestHiddenTopWords(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want []string
	}{
		{"b a c b a b", 2, []string{"b", "a"}},
		{"x y z y z", 3, []string{"y", "z", "x"}},
		{"One one ONE", 5, []string{"one"}},
		{"a b", 0, nil},
		{"", 3, nil},
	}
	for _, tt := range tests {
		if got := TopWords(tt.s, tt.n); len(got) != len(tt.want) || (len(got) > 0 && !slices.Equal(got, tt.want)) {
			t.Errorf("TopWords(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
