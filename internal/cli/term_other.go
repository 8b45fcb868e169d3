//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package cli

import "io"

// isTerminal reports false: without a terminal check, output is never
// taken for a terminal (no progress bars, no prompts).
func isTerminal(io.Writer) bool { return false }
