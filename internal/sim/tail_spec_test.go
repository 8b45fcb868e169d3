package sim

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestTailSpec: the flags given choose the policy; combinations that do
// not go together are UsageErrors naming the flags.
func TestTailSpec(t *testing.T) {
	t.Parallel()
	base := TailSpec{Method: "auto", Percentiles: "50,99.9"}
	kOfN := base
	kOfN.N, kOfN.K, kOfN.Set = 3, 1, TailSpecSet{N: true, K: true}
	var p TailParams
	if err := kOfN.Apply(&p); err != nil || p.Policy.Kind != PolicyKOfN || p.Policy.N != 3 || !slices.Equal(p.Quantiles, []float64{0.5, 0.999}) {
		t.Errorf("k of n: %+v %v", p, err)
	}
	hedge := base
	hedge.HedgeAt, hedge.Hedge, hedge.Method = 0.9, Latency{MedianS: 1, P90S: 2}, "monte-carlo"
	hedge.Set = TailSpecSet{HedgeAt: true, HedgeMedianS: true, HedgeP90S: true}
	p = TailParams{}
	if err := hedge.Apply(&p); err != nil || p.Policy.Kind != PolicyHedge || p.Policy.Hedge == nil || p.Policy.Hedge.P90S != 2 || p.Method != MethodMonteCarlo {
		t.Errorf("hedge: %+v %v", p, err)
	}
	for _, tt := range []struct {
		name string
		set  TailSpecSet
		edit func(*TailSpec)
		want string
	}{
		{"no policy", TailSpecSet{}, nil, "want a policy"},
		{"both", TailSpecSet{N: true, K: true, HedgeAt: true}, nil, "not both"},
		{"k missing", TailSpecSet{N: true}, nil, "missing --k"},
		{"two hedges", TailSpecSet{HedgeAt: true, HedgeAfterS: true}, func(s *TailSpec) { s.HedgeAt = 0.5 }, "--hedge-at or --hedge-after-s, not both"},
		{"hedge at 0", TailSpecSet{HedgeAt: true}, nil, "--hedge-at must be in (0, 1), got 0"},
		{"half a latency", TailSpecSet{HedgeAfterS: true, HedgeMedianS: true}, nil, "together"},
		{"latency without a hedge", TailSpecSet{N: true, K: true, HedgeP90S: true}, nil, "need a hedge"},
		{"bad method", TailSpecSet{N: true, K: true}, func(s *TailSpec) { s.Method = "guess" }, "--method must be"},
		{"bad percentile", TailSpecSet{N: true, K: true}, func(s *TailSpec) { s.Percentiles = "50,100" }, "--percentiles must be"},
	} {
		s := base
		s.N, s.K, s.Set = 2, 1, tt.set
		if tt.edit != nil {
			tt.edit(&s)
		}
		var ue *UsageError
		if err := s.Apply(&TailParams{}); !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want a UsageError with %q", tt.name, err, tt.want)
		}
	}
}
