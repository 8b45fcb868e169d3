package swarm

import (
	"testing"

	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// TestCoolDownDue: the cool-down starts above 25% duplicates or below 75%
// gate passes, only over a full enough window.
func TestCoolDownDue(t *testing.T) {
	t.Parallel()
	opts := layout.MergeOptions{}
	opts.Defaults()
	mk := func(n, dups, fails int) []outcome {
		w := make([]outcome, n)
		for i := range w {
			w[i] = outcome{dup: i < dups, passed: i < n-fails}
		}
		return w
	}
	tests := []struct {
		name   string
		window []outcome
		want   bool
	}{
		{"empty", nil, false},
		{"too few to judge", mk(7, 7, 7), false},
		{"healthy", mk(8, 2, 2), false},      // 25% dups, 75% passed: at the limits
		{"duplicates", mk(8, 3, 0), true},    // 37.5% dups
		{"failing gates", mk(8, 0, 3), true}, // 62.5% passed
		{"big window healthy", mk(20, 5, 5), false},
	}
	for _, tt := range tests {
		if got, d, p := coolDownDue(tt.window, opts); got != tt.want {
			t.Errorf("%s: cool=%v (dup %.2f pass %.2f), want %v", tt.name, got, d, p, tt.want)
		}
	}
}
