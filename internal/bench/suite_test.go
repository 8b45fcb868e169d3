package bench

import (
	"slices"
	"testing"
)

// TestSuiteModes: direct first unless left out, then the gateway, then the
// ablated gateway when one primitive is off.
func TestSuiteModes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s    Suite
		want []string
	}{
		{Suite{}, []string{"direct", "gateway"}},
		{Suite{NoDirect: true}, []string{"gateway"}},
		{Suite{Ablate: "retry"}, []string{"direct", "gateway", "gateway-no-retry"}},
	} {
		if got := tt.s.Modes(); !slices.Equal(got, tt.want) {
			t.Errorf("%+v: modes %v, want %v", tt.s, got, tt.want)
		}
	}
	if rs, err := RunSuite(t.Context(), Suite{Variants: []string{"base"}}); err != nil || len(rs) != 0 {
		t.Errorf("no scenarios: %v %v", rs, err)
	}
}
