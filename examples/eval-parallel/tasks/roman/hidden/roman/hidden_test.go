package roman

import (
	"errors"
	"testing"
)

func TestHiddenRoundTrip(t *testing.T) {
	for n := 1; n <= 3999; n++ {
		s, err := ToRoman(n)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := FromRoman(s); err != nil || got != n {
			t.Fatalf("FromRoman(%q) = %d, %v; want %d", s, got, err, n)
		}
	}
}

func TestHiddenRejectsNonStandard(t *testing.T) {
	for _, s := range []string{"", "IIII", "VV", "IC", "IL", "XM", "VX", "CMM", "MMMM", "iv", "XIIII", "IIV", "DD", "LC", "X I", "XⅠ", "MMMCMXCIXI"} {
		if n, err := FromRoman(s); !errors.Is(err, ErrSyntax) {
			t.Errorf("FromRoman(%q) = %d, %v; want ErrSyntax", s, n, err)
		}
	}
}
