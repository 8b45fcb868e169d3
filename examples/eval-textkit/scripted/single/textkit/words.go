package textkit

import (
	"strings"
	"unicode"
)

// Words returns the words of s, lower-cased: its maximal runs of letters
// and digits.
func Words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}
