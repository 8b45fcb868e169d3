package attempt

import (
	"fmt"
	"strings"

	"github.com/apiary-dev/apiary/internal/envelope"
)

// Clip bounds s to n runes, marking a cut with an ellipsis.
func Clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// FirstLine is the first line of s, trimmed.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// Brief is the part of an agent's prompt that every worker attempt shares:
// where its envelope is, what it may and may not change, what to read,
// which checks run (on what: checksOn), then the caller's extra lines and
// the rules apiary enforces. It never includes file contents.
func Brief(e *envelope.Envelope, envPath, checksOn string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nTask envelope (JSON): %s\n", envPath)
	scope := e.Authority.WriteScope
	if len(scope) == 0 {
		scope = []string{"(nothing)"}
	}
	fmt.Fprintf(&b, "You may change only: %s\n", strings.Join(scope, ", "))
	if len(e.Completion.Sealed) > 0 {
		fmt.Fprintf(&b, "Never change: %s\n", strings.Join(e.Completion.Sealed, ", "))
	}
	if len(e.Inputs.Paths) > 0 {
		fmt.Fprintf(&b, "Read first: %s\n", strings.Join(e.Inputs.Paths, ", "))
	}
	if len(e.Completion.Checks) > 0 {
		fmt.Fprintf(&b, "apiary will run these checks on %s: %s\n", checksOn, strings.Join(e.Completion.Checks, "; "))
	}
	for _, l := range extra {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString("apiary rejects changes outside your scope, deleted or disabled tests and added skip markers. Leave your changes in the working tree: apiary commits them.\n")
	return b.String()
}
