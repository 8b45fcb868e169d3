package semver

import "testing"

func TestCompare(t *testing.T) {
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-beta", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0"}
	for i := 1; i < len(order); i++ {
		a, _ := Parse(order[i-1])
		b, _ := Parse(order[i])
		if Compare(a, b) != -1 || Compare(b, a) != 1 {
			t.Errorf("%s should precede %s", a, b)
		}
	}
	a, _ := Parse("1.0.0+x")
	b, _ := Parse("1.0.0+y")
	if Compare(a, b) != 0 {
		t.Error("build metadata counted")
	}
}
