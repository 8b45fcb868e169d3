package roman

import (
	"errors"
	"testing"
)

func TestFromRoman(t *testing.T) {
	for s, want := range map[string]int{"I": 1, "IV": 4, "XLII": 42, "MCMXCIV": 1994} {
		if got, err := FromRoman(s); err != nil || got != want {
			t.Errorf("FromRoman(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "IIII", "IC", "iv", "MMMM"} {
		if _, err := FromRoman(s); !errors.Is(err, ErrSyntax) {
			t.Errorf("FromRoman(%q): %v, want ErrSyntax", s, err)
		}
	}
}
