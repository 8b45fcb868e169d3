// Package roman converts between integers and Roman numerals in their
// standard, subtractive form (IV, not IIII), from 1 to 3999.
package roman

import (
	"errors"
	"fmt"
	"strings"
)

// Errors.
var (
	// ErrRange is returned for a number outside 1 to 3999.
	ErrRange = errors.New("roman: number out of range 1-3999")
	// ErrSyntax is returned for a string that is not a numeral in the
	// standard form.
	ErrSyntax = errors.New("roman: invalid numeral")
)

// numerals are the symbols, largest first, with the subtractive pairs in
// between.
var numerals = []struct {
	value  int
	symbol string
}{
	{1000, "M"}, {900, "CM"}, {500, "D"}, {400, "CD"},
	{100, "C"}, {90, "XC"}, {50, "L"}, {40, "XL"},
	{10, "X"}, {9, "IX"}, {5, "V"}, {4, "IV"}, {1, "I"},
}

// ToRoman returns n as a Roman numeral.
func ToRoman(n int) (string, error) {
	if n < 1 || n > 3999 {
		return "", fmt.Errorf("%w: %d", ErrRange, n)
	}
	var b strings.Builder
	for _, r := range numerals {
		for n >= r.value {
			b.WriteString(r.symbol)
			n -= r.value
		}
	}
	return b.String(), nil
}

// FromRoman parses a numeral in exactly the standard form ToRoman writes:
// upper case, subtractive pairs, no symbol repeated more than it must be.
func FromRoman(s string) (int, error) {
	n, rest := 0, s
	for _, r := range numerals {
		for strings.HasPrefix(rest, r.symbol) {
			n += r.value
			rest = rest[len(r.symbol):]
		}
	}
	if rest != "" || n == 0 || n > 3999 {
		return 0, fmt.Errorf("%w: %q", ErrSyntax, s)
	}
	// The greedy reading accepts forms such as IIII or XCX; only the
	// canonical spelling of the number it found is valid.
	if canon, _ := ToRoman(n); canon != s {
		return 0, fmt.Errorf("%w: %q (the standard form of %d is %s)", ErrSyntax, s, n, canon)
	}
	return n, nil
}
