package calc

import "testing"

func TestMul(t *testing.T) {
	if got := Mul(4, 5); got != 20 {
		t.Fatalf("Mul(4, 5) = %d, want 20", got)
	}
}
