package textkit

import (
	"slices"
	"testing"
)

func TestTopWords(t *testing.T) {
	if got := TopWords("b a c b a b", 2); !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("TopWords = %q", got)
	}
}
