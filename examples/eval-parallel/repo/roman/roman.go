// Package roman converts between integers and Roman numerals in their
// standard, subtractive form (IV, not IIII), from 1 to 3999.
package roman

import (
	"errors"
	"fmt"
	"strings"
)

// ErrRange is returned for a number outside 1 to 3999.
var ErrRange = errors.New("roman: number out of range 1-3999")

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
