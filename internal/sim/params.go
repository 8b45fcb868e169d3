package sim

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalid is matched by every parameter error of this package.
var ErrInvalid = errors.New("sim: invalid parameter")

// ParamError names the parameter that is out of range and what it must be.
type ParamError struct {
	Param string // parameter name, as the CLI flag without dashes: "f", "rho"
	Value string // the offending value as given
	Want  string // the valid range, e.g. "in [0, 1]"
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("sim: %s must be %s, got %s", e.Param, e.Want, e.Value)
}

// Unwrap returns ErrInvalid.
func (e *ParamError) Unwrap() error { return ErrInvalid }

func paramErr(name string, v any, want string) error {
	return &ParamError{Param: name, Value: fmt.Sprint(v), Want: want}
}

// checkProb reports an error unless 0 <= v <= 1.
func checkProb(name string, v float64) error {
	if !(v >= 0 && v <= 1) { // also rejects NaN
		return paramErr(name, v, "in [0, 1]")
	}
	return nil
}

// checkNonNeg reports an error unless v is finite and >= 0.
func checkNonNeg(name string, v float64) error {
	if !(v >= 0 && v <= math.MaxFloat64) {
		return paramErr(name, v, "finite and >= 0")
	}
	return nil
}
