package semver

import (
	"errors"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	v, err := Parse("v1.2.3-rc.1+build.5")
	if err != nil {
		t.Fatal(err)
	}
	if v.Major != 1 || v.Minor != 2 || v.Patch != 3 || !slices.Equal(v.Pre, []string{"rc", "1"}) || v.Build != "build.5" {
		t.Fatalf("Parse = %+v", v)
	}
	if s := v.String(); s != "1.2.3-rc.1+build.5" {
		t.Fatalf("String = %q", s)
	}
	for _, bad := range []string{"", "1.2", "1.2.3.4", "01.2.3", "1.2.3-", "1.2.3-01", "1.2.3+", "1.x.3"} {
		if _, err := Parse(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q): %v, want ErrSyntax", bad, err)
		}
	}
}
