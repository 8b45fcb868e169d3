package calc

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for src, want := range map[string]string{
		"1 + 2 * 3":   "(1 + (2 * 3))",
		"-2^2":        "(-(2 ^ 2))",
		"2^3^2":       "(2 ^ (3 ^ 2))",
		"max(a, b+1)": "max(a, (b + 1))",
	} {
		e, err := Parse(src)
		if err != nil || e.String() != want {
			t.Errorf("Parse(%q) = %v, %v; want %s", src, e, err, want)
		}
	}
	if _, err := Parse("1 +"); !errors.Is(err, ErrSyntax) {
		t.Errorf("Parse(1 +): %v", err)
	}
}
