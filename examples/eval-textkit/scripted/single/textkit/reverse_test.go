package textkit

import "testing"

func TestReverse(t *testing.T) {
	if got := Reverse("héllo"); got != "olléh" {
		t.Fatalf("Reverse(héllo) = %q", got)
	}
}
