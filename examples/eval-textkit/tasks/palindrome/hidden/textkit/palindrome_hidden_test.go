package textkit

import "testing"

func TestHiddenIsPalindrome(t *testing.T) {
	for in, want := range map[string]bool{
		"": true, "A man, a plan, a canal: Panama": true, "Abba": true, "No 'x' in Nixon": true,
		"été": true, "12321": true, "ab": false, "123": false, "abca": false,
	} {
		if got := IsPalindrome(in); got != want {
			t.Errorf("IsPalindrome(%q) = %v, want %v", in, got, want)
		}
	}
}
