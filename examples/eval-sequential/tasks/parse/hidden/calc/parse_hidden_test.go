package calc

import (
	"errors"
	"testing"
)

func TestHiddenParseTrees(t *testing.T) {
	for src, want := range map[string]string{
		"42":                   "42",
		"x":                    "x",
		"1 - 2 - 3":            "((1 - 2) - 3)",
		"8 / 4 / 2":            "((8 / 4) / 2)",
		"2 * (3 + 4)":          "(2 * (3 + 4))",
		"--x":                  "(-(-x))",
		"-2^-1":                "(-(2 ^ (-1)))",
		"2^3^2":                "(2 ^ (3 ^ 2))",
		"a*-b + c":             "((a * (-b)) + c)",
		"min(1, max(2, 3), x)": "min(1, max(2, 3), x)",
		"sqrt(2)^2":            "(sqrt(2) ^ 2)",
		"0.5 + 3.":             "(0.5 + 3)",
		"(((1)))":              "1",
	} {
		e, err := Parse(src)
		if err != nil {
			t.Errorf("Parse(%q): %v", src, err)
			continue
		}
		if e.String() != want {
			t.Errorf("Parse(%q) = %s, want %s", src, e, want)
		}
	}
	if e, _ := Parse("f(x)"); e != nil {
		if c, ok := e.(Call); !ok || c.Func != "f" || len(c.Args) != 1 || c.Args[0] != (Var{"x"}) {
			t.Errorf("Parse(f(x)) = %#v", e)
		}
	}
}

func TestHiddenParseErrors(t *testing.T) {
	for _, src := range []string{"", "1 +", "(1", "1)", "f(", "f(1,)", "1 2", "x = 1", "*3", "2 ^"} {
		if e, err := Parse(src); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %v, %v; want ErrSyntax", src, e, err)
		}
	}
	if _, err := Parse("1 # 2"); !errors.Is(err, ErrLex) {
		t.Errorf("Parse(1 # 2): %v, want ErrLex", err)
	}
}
