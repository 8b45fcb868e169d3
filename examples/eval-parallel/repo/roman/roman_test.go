package roman

import (
	"errors"
	"testing"
)

func TestToRoman(t *testing.T) {
	for n, want := range map[int]string{1: "I", 4: "IV", 9: "IX", 14: "XIV", 40: "XL", 90: "XC", 400: "CD", 1994: "MCMXCIV", 3999: "MMMCMXCIX"} {
		if got, err := ToRoman(n); err != nil || got != want {
			t.Errorf("ToRoman(%d) = %q, %v; want %q", n, got, err, want)
		}
	}
	for _, n := range []int{0, -1, 4000} {
		if _, err := ToRoman(n); !errors.Is(err, ErrRange) {
			t.Errorf("ToRoman(%d): %v, want ErrRange", n, err)
		}
	}
}
