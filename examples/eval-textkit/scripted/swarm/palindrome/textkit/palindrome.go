// Package textkit holds small text utilities.
package textkit

import (
	"strings"
	"unicode"
)

// IsPalindrome reports whether s reads the same backwards, ignoring case
// and every rune that is not a letter or a digit.
func IsPalindrome(s string) bool {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String() == Reverse(b.String())
}
