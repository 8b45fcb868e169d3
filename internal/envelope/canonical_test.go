package envelope

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

func TestCanonical(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string
	}{
		{`{"b": 1, "a": [true, false, null], "c": {"z": "", "y": 2}}`, `{"a":[true,false,null],"b":1,"c":{"y":2,"z":""}}`},
		{`[1.0, -0, 0.5, 100, 1e21, 1e20, 1e-6, 1e-7, 123.456, -1.5e-10, 4.5e15, 9007199254740993]`,
			`[1,0,0.5,100,1e+21,100000000000000000000,0.000001,1e-7,123.456,-1.5e-10,4500000000000000,9007199254740992]`},
		{`"<&>\u2028\u00e9\u0001\t\"\\/"`, "\"<&>\u2028é\\u0001\\t\\\"\\\\/\""},
		// Keys sort by UTF-16 code units: U+FB01 (0xFB01) sorts after U+1F600 (0xD83D...) in UTF-16
		// although it comes first in UTF-8 order.
		{`{"\ufb01": 1, "\ud83d\ude00": 2, "a": 3}`, "{\"a\":3,\"😀\":2,\"ﬁ\":1}"},
	}
	for _, tt := range tests {
		got, err := Canonical(mustParse(t, tt.in))
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if string(got) != tt.want {
			t.Errorf("Canonical(%s)\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
	// Go values encode the same as their parsed JSON.
	type pair struct {
		Z int    `json:"z"`
		A string `json:"a"`
	}
	got, err := Canonical(pair{Z: 1, A: "x"})
	if err != nil || string(got) != `{"a":"x","z":1}` {
		t.Errorf("struct: %s %v", got, err)
	}
	if _, err := Canonical(math.NaN()); !errors.Is(err, ErrSyntax) {
		t.Errorf("NaN: err = %v, want ErrSyntax", err)
	}
}

// TestCanonicalNumberRoundTrip checks that the shortest form parses back to
// the same float64 for a spread of magnitudes.
func TestCanonicalNumberRoundTrip(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{1, 0.1, 1.0 / 3, 2.5e-300, 1.7976931348623157e308, 5e-324, 123456789012345680000, 1e-5} {
		for _, x := range []float64{f, -f} {
			b, err := Canonical(x)
			if err != nil {
				t.Fatal(err)
			}
			var back float64
			if err := json.Unmarshal(b, &back); err != nil || back != x {
				t.Errorf("%v encoded as %s, parsed back as %v (%v)", x, b, back, err)
			}
		}
	}
}
