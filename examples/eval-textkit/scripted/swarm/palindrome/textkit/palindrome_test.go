package textkit

import "testing"

func TestIsPalindrome(t *testing.T) {
	if !IsPalindrome("A man, a plan, a canal: Panama") || IsPalindrome("ab") {
		t.Fatal("IsPalindrome is wrong")
	}
}
