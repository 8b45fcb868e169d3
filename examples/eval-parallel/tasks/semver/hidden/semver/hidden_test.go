package semver

import "testing"

// The precedence chain of the specification's own example, and more.
var chain = []string{
	"0.9.9", "1.0.0-0", "1.0.0-2", "1.0.0-10", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
	"1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0-a", "2.0.0", "10.0.0",
}

func TestHiddenCompareChain(t *testing.T) {
	vs := make([]Version, len(chain))
	for i, s := range chain {
		v, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		vs[i] = v
	}
	for i := range vs {
		for j := range vs {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := Compare(vs[i], vs[j]); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", vs[i], vs[j], got, want)
			}
		}
	}
}

func TestHiddenSortStableIgnoresBuild(t *testing.T) {
	var vs []Version
	for _, s := range []string{"1.0.0+b", "1.0.0-rc.1", "0.1.0", "1.0.0+a", "1.0.0-rc.1+z", "1.0.0"} {
		v, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	Sort(vs)
	var got []string
	for _, v := range vs {
		got = append(got, v.String())
	}
	want := []string{"0.1.0", "1.0.0-rc.1", "1.0.0-rc.1+z", "1.0.0+b", "1.0.0+a", "1.0.0"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Sort = %v, want %v", got, want)
		}
	}
}
