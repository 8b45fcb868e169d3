package calc

import (
	"errors"
	"strings"
	"testing"
)

func TestHiddenLexTokens(t *testing.T) {
	for src, want := range map[string]string{
		"":               "EOF:@0",
		"  \t":           "EOF:@3",
		"max(a_1,.5)^-2": "Ident:max@0 Op:(@3 Ident:a_1@4 Op:,@7 Number:.5@8 Op:)@10 Op:^@11 Op:-@12 Number:2@13 EOF:@14",
		"3. + _x*12/4":   "Number:3.@0 Op:+@3 Ident:_x@5 Op:*@7 Number:12@8 Op:/@10 Number:4@11 EOF:@12",
		"y=7":            "Ident:y@0 Op:=@1 Number:7@2 EOF:@3",
		"2x":             "Number:2@0 Ident:x@1 EOF:@2",
	} {
		toks, err := Lex(src)
		if err != nil {
			t.Errorf("Lex(%q): %v", src, err)
			continue
		}
		var got []string
		for _, tk := range toks {
			got = append(got, tk.Kind.String()+":"+tk.Text+"@"+itoa(tk.Pos))
		}
		if g := strings.Join(got, " "); g != want {
			t.Errorf("Lex(%q)\n got %s\nwant %s", src, g, want)
		}
	}
}

func TestHiddenLexErrors(t *testing.T) {
	for src, off := range map[string]string{"1 # 2": "2", "a;": "1", "é": "0", "3 % 4": "2"} {
		_, err := Lex(src)
		if !errors.Is(err, ErrLex) || !strings.Contains(err.Error(), off) {
			t.Errorf("Lex(%q): %v, want ErrLex naming offset %s", src, err, off)
		}
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
