package capability

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSpecCaveats: only the fields a Spec marks as given become caveats,
// in a fixed order; a bad value is a SpecError naming its field.
func TestSpecCaveats(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name  string
		spec  Spec
		kinds []Kind
		field string // of the SpecError, "" for none
	}{
		{"nothing", Spec{Tools: "read", Depth: 2}, nil, ""},
		{"everything", Spec{Tools: "read, write", Paths: []string{"/ws"}, Network: "any", Expires: "1h", BudgetUSD: "2.5",
			Depth: 1, Fence: 7, Set: SpecSet{Tools: true, Network: true, Expires: true, BudgetUSD: true, Depth: true, Fence: true}},
			[]Kind{KindTools, KindPaths, KindNetwork, KindExpiry, KindBudget, KindDepth, KindFence}, ""},
		{"no tools", Spec{Set: SpecSet{Tools: true}}, []Kind{KindTools}, ""},
		{"hosts", Spec{Network: "a.example, b.example", Set: SpecSet{Network: true}}, []Kind{KindNetwork}, ""},
		{"empty network", Spec{Network: " , ", Set: SpecSet{Network: true}}, nil, "network"},
		{"bad expiry", Spec{Expires: "soon", Set: SpecSet{Expires: true}}, nil, "expires"},
		{"negative tokens", Spec{BudgetTokens: -1, Set: SpecSet{BudgetTokens: true}}, nil, "budget-tokens"},
		{"bad dollars", Spec{BudgetUSD: "-1", Set: SpecSet{BudgetUSD: true}}, nil, "budget-usd"},
		{"negative depth", Spec{Depth: -1, Set: SpecSet{Depth: true}}, nil, "depth"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := tt.spec.Caveats(now)
			var se *SpecError
			if tt.field != "" {
				if !errors.As(err, &se) || se.Field != tt.field || !strings.HasPrefix(err.Error(), tt.field+" ") {
					t.Fatalf("err = %v, want a SpecError for %s", err, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != len(tt.kinds) {
				t.Fatalf("caveats %v, want kinds %v", cs, tt.kinds)
			}
			for i, c := range cs {
				if c.Kind() != tt.kinds[i] {
					t.Errorf("caveat %d is %v, want %v", i, c.Kind(), tt.kinds[i])
				}
			}
		})
	}
}

func TestParseWhenAndUSD(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	if got, err := ParseWhen("90m", now); err != nil || !got.Equal(now.Add(90*time.Minute)) {
		t.Errorf("a duration: %v %v", got, err)
	}
	if got, err := ParseWhen("2027-01-01T00:00:00Z", now); err != nil || got.Year() != 2027 {
		t.Errorf("a time: %v %v", got, err)
	}
	if v, err := ParseUSD("spend-usd", "2.5"); err != nil || v != 2_500_000 {
		t.Errorf("2.5 dollars: %d %v", v, err)
	}
	for _, bad := range []string{"x", "-0.5", "NaN", "2e12"} {
		if _, err := ParseUSD("spend-usd", bad); err == nil || !strings.HasPrefix(err.Error(), "spend-usd wants") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestReadToken(t *testing.T) {
	t.Parallel()
	tok, err := Mint([]byte("0123456789abcdef0123456789abcdef"), ID{Root: "apiary"}, Tools("read"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadToken(strings.NewReader("\n " + tok.String() + "\n"))
	if err != nil || got.String() != tok.String() {
		t.Errorf("ReadToken = %v, %v", got, err)
	}
	if _, err := ReadToken(strings.NewReader(strings.Repeat("A", MaxEncodedLen+10))); err == nil {
		t.Error("a text longer than any token decoded")
	}
}
