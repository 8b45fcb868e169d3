package calc

import (
	"errors"
	"math"
	"testing"
)

func evalString(t *testing.T, src string, env Env) (float64, error) {
	t.Helper()
	e, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return Eval(e, env)
}

func TestHiddenEvalValues(t *testing.T) {
	env := Env{"a": 2, "b": -3, "long_name1": 10}
	for src, want := range map[string]float64{
		"1 - 2 - 3":         -4,
		"2^3^2":             512,
		"-2^2":              -4,
		"(-2)^2":            4,
		"2^-1":              0.5,
		"a * b":             -6,
		"abs(b) + a":        5,
		"min(4, a, 7)":      2,
		"max(b)":            -3,
		"sqrt(a*8)":         4,
		"long_name1 / 4":    2.5,
		"max(1, min(a, b))": 1,
	} {
		got, err := evalString(t, src, env)
		if err != nil || math.Abs(got-want) > 1e-12 {
			t.Errorf("Eval(%s) = %g, %v; want %g", src, got, err, want)
		}
	}
	if got, err := evalString(t, "3 * 4", nil); err != nil || got != 12 {
		t.Errorf("with a nil Env: %g, %v", got, err)
	}
}

func TestHiddenEvalErrors(t *testing.T) {
	for src, want := range map[string]error{
		"y + 1":       ErrUndefined,
		"nosuch(1)":   ErrUndefined,
		"sqrt(1, 2)":  ErrArgs,
		"abs(1, 2)":   ErrArgs,
		"1 / (2 - 2)": ErrDomain,
		"sqrt(-4)":    ErrDomain,
	} {
		if _, err := evalString(t, src, Env{"x": 1}); !errors.Is(err, want) {
			t.Errorf("Eval(%s): %v, want %v", src, err, want)
		}
	}
	if _, err := Eval(Call{Func: "min"}, nil); !errors.Is(err, ErrArgs) {
		t.Errorf("min(): %v, want ErrArgs", err)
	}
}
