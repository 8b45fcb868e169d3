package textkit

import (
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	if got := Words("Hello, world! Hello?"); !slices.Equal(got, []string{"hello", "world", "hello"}) {
		t.Fatalf("Words = %q", got)
	}
}
