package textkit

import "testing"

func TestHiddenReverse(t *testing.T) {
	for in, want := range map[string]string{"": "", "a": "a", "abc": "cba", "héllo": "olléh", "日本語": "語本日"} {
		if got := Reverse(in); got != want {
			t.Errorf("Reverse(%q) = %q, want %q", in, got, want)
		}
	}
}
