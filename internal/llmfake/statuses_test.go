package llmfake

import (
	"slices"
	"testing"
)

func TestParseStatuses(t *testing.T) {
	t.Parallel()
	if got, err := ParseStatuses(" 500, 502,,529 "); err != nil || !slices.Equal(got, []int{500, 502, 529}) {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"429", "5xx", "600"} {
		if _, err := ParseStatuses(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
