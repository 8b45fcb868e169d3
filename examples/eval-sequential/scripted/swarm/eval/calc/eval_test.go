package calc

import (
	"errors"
	"testing"
)

func TestEval(t *testing.T) {
	env := Env{"x": 3}
	for src, want := range map[string]float64{"1 + 2 * x": 7, "-2^2": -4, "max(1, x, 2)": 3, "sqrt(16) / 2": 2} {
		e, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := Eval(e, env); err != nil || got != want {
			t.Errorf("Eval(%s) = %g, %v; want %g", src, got, err, want)
		}
	}
	e, _ := Parse("1 / 0")
	if _, err := Eval(e, nil); !errors.Is(err, ErrDomain) {
		t.Errorf("1/0: %v", err)
	}
}
