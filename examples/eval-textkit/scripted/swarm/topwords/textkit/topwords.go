// Package textkit holds small text utilities.
package textkit

import (
	"sort"
	"strings"
	"unicode"
)

// Words splits s into lower-cased words of letters and digits. (There is
// no Words in this tree yet, so TopWords brings its own.)
func Words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// TopWords returns the n most frequent words of s (as Words splits them),
// most frequent first, ties in alphabetical order.
func TopWords(s string, n int) []string {
	count := map[string]int{}
	for _, w := range Words(s) {
		count[w]++
	}
	words := make([]string, 0, len(count))
	for w := range count {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if count[words[i]] != count[words[j]] {
			return count[words[i]] > count[words[j]]
		}
		return words[i] < words[j]
	})
	if n < len(words) {
		words = words[:max(n, 0)]
	}
	return words
}
