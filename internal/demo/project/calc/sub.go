package calc

// Sub returns a - b.
func Sub(a, b int) int { return a - b }
