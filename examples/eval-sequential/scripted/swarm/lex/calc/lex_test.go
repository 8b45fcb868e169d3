package calc

import (
	"errors"
	"testing"
)

func TestLex(t *testing.T) {
	toks, err := Lex("x1 = 2.5*(y+3)")
	if err != nil {
		t.Fatal(err)
	}
	want := []Token{{Ident, "x1", 0}, {Op, "=", 3}, {Number, "2.5", 5}, {Op, "*", 8}, {Op, "(", 9},
		{Ident, "y", 10}, {Op, "+", 11}, {Number, "3", 12}, {Op, ")", 13}, {EOF, "", 14}}
	if len(toks) != len(want) {
		t.Fatalf("Lex = %v", toks)
	}
	for i := range want {
		if toks[i] != want[i] {
			t.Errorf("token %d = %v, want %v", i, toks[i], want[i])
		}
	}
	if _, err := Lex("2 $ 3"); !errors.Is(err, ErrLex) {
		t.Errorf("Lex(2 $ 3): %v", err)
	}
}
