package textkit

import "sort"

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
