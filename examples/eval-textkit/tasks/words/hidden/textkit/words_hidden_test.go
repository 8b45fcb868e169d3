package textkit

import (
	"slices"
	"testing"
)

func TestHiddenWords(t *testing.T) {
	for in, want := range map[string][]string{
		"":                     nil,
		"Hello, world! Hello?": {"hello", "world", "hello"},
		"it's 2 o'clock":       {"it", "s", "2", "o", "clock"},
		"ÉTÉ  été":             {"été", "été"},
		"--":                   nil,
	} {
		if got := Words(in); !slices.Equal(got, want) {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}
