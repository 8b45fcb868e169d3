package calc

import "testing"

func TestSub(t *testing.T) {
	if got := Sub(7, 2); got != 5 {
		t.Fatalf("Sub(7, 2) = %d, want 5", got)
	}
}
