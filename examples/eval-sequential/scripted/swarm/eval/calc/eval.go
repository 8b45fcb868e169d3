// Package calc is a small calculator language (see doc.go); this file
// is its evaluator.
package calc

import (
	"errors"
	"fmt"
	"math"
)

// Errors of Eval.
var (
	ErrUndefined = errors.New("calc: undefined") // a variable or function that does not exist
	ErrArgs      = errors.New("calc: wrong number of arguments")
	ErrDomain    = errors.New("calc: domain error") // division by zero, sqrt of a negative number
)

// Env holds the values of variables.
type Env map[string]float64

// Eval computes the value of e with the variables of env (which may be
// nil).
func Eval(e Expr, env Env) (float64, error) {
	switch e := e.(type) {
	case Num:
		return e.Value, nil
	case Var:
		v, ok := env[e.Name]
		if !ok {
			return 0, fmt.Errorf("%w variable %s", ErrUndefined, e.Name)
		}
		return v, nil
	case Neg:
		x, err := Eval(e.X, env)
		return -x, err
	case Binary:
		x, err := Eval(e.X, env)
		if err != nil {
			return 0, err
		}
		y, err := Eval(e.Y, env)
		if err != nil {
			return 0, err
		}
		switch e.Op {
		case '+':
			return x + y, nil
		case '-':
			return x - y, nil
		case '*':
			return x * y, nil
		case '/':
			if y == 0 {
				return 0, fmt.Errorf("%w: division by zero", ErrDomain)
			}
			return x / y, nil
		case '^':
			return math.Pow(x, y), nil
		}
		return 0, fmt.Errorf("calc: unknown operator %q", e.Op)
	case Call:
		args := make([]float64, len(e.Args))
		for i, a := range e.Args {
			v, err := Eval(a, env)
			if err != nil {
				return 0, err
			}
			args[i] = v
		}
		return call(e.Func, args)
	}
	return 0, fmt.Errorf("calc: unknown expression %T", e)
}

// call applies a built-in function.
func call(name string, args []float64) (float64, error) {
	one := func(f func(float64) (float64, error)) (float64, error) {
		if len(args) != 1 {
			return 0, fmt.Errorf("%w: %s takes 1, got %d", ErrArgs, name, len(args))
		}
		return f(args[0])
	}
	fold := func(pick func(a, b float64) float64) (float64, error) {
		if len(args) == 0 {
			return 0, fmt.Errorf("%w: %s takes at least 1", ErrArgs, name)
		}
		v := args[0]
		for _, a := range args[1:] {
			v = pick(v, a)
		}
		return v, nil
	}
	switch name {
	case "sqrt":
		return one(func(x float64) (float64, error) {
			if x < 0 {
				return 0, fmt.Errorf("%w: sqrt of %g", ErrDomain, x)
			}
			return math.Sqrt(x), nil
		})
	case "abs":
		return one(func(x float64) (float64, error) { return math.Abs(x), nil })
	case "min":
		return fold(math.Min)
	case "max":
		return fold(math.Max)
	}
	return 0, fmt.Errorf("%w function %s", ErrUndefined, name)
}
