package calc

// Mul returns a * b.
func Mul(a, b int) int { return a * b }
