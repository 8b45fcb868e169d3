package review

import (
	"errors"
	"strings"
	"testing"
)

func TestFindingNormalize(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", MaxEvidence)
	tests := []struct {
		name string
		in   Finding
		want Finding // zero: an error is expected
	}{
		{"canonical", Finding{Kind: " Secret ", Severity: "HIGH", File: "a/b.go", Line: 3, Evidence: " x "},
			Finding{Kind: "secret", Severity: SevHigh, File: "a/b.go", Line: 3, Evidence: "x"}},
		{"clipped evidence", Finding{Kind: "k", Severity: "info", Evidence: long},
			Finding{Kind: "k", Severity: SevInfo, Evidence: clipBytes(long, MaxEvidence)}},
		{"bad severity", Finding{Kind: "k", Severity: "severe", Evidence: "x"}, Finding{}},
		{"empty kind", Finding{Kind: "", Severity: "low", Evidence: "x"}, Finding{}},
		{"kind with spaces", Finding{Kind: "a b", Severity: "low", Evidence: "x"}, Finding{}},
		{"absolute file", Finding{Kind: "k", Severity: "low", File: "/etc/passwd", Evidence: "x"}, Finding{}},
		{"escaping file", Finding{Kind: "k", Severity: "low", File: "a/../../b", Evidence: "x"}, Finding{}},
		{"negative line", Finding{Kind: "k", Severity: "low", Line: -1, Evidence: "x"}, Finding{}},
		{"empty evidence", Finding{Kind: "k", Severity: "low", Evidence: "  "}, Finding{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := tt.in
			err := f.Normalize()
			if tt.want.Kind == "" {
				if !errors.Is(err, ErrFinding) {
					t.Fatalf("Normalize(%+v) = %v, want ErrFinding", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Kind != tt.want.Kind || f.Severity != tt.want.Severity || f.File != tt.want.File || f.Line != tt.want.Line || f.Evidence != tt.want.Evidence {
				t.Errorf("got %+v, want %+v", f, tt.want)
			}
			if len(f.Evidence) > MaxEvidence {
				t.Errorf("evidence of %d bytes", len(f.Evidence))
			}
		})
	}
}

func TestSeverityOrder(t *testing.T) {
	t.Parallel()
	if !SevCritical.AtLeast(SevHigh) || SevMedium.AtLeast(SevHigh) || !SevHigh.AtLeast(SevHigh) || Severity("bogus").AtLeast(SevInfo) {
		t.Error("severity order is wrong")
	}
	fs := []Finding{{Severity: SevLow, File: "b"}, {Severity: SevCritical, File: "z"}, {Severity: SevLow, File: "a", Line: 2}, {Severity: SevLow, File: "a", Line: 1}}
	SortFindings(fs)
	got := []string{}
	for _, f := range fs {
		got = append(got, string(f.Severity)+":"+f.Where())
	}
	if want := "critical:z low:a:1 low:a:2 low:b"; strings.Join(got, " ") != want {
		t.Errorf("sorted %v, want %s", got, want)
	}
}

func TestParseFindings(t *testing.T) {
	t.Parallel()
	one := `{"kind":"injection","severity":"high","file":"db.go","line":12,"evidence":"query built by concatenation"}`
	tests := []struct {
		name  string
		text  string
		kinds []string // nil: error
	}{
		{"object", `{"findings":[` + one + `]}`, []string{"injection"}},
		{"array", `[` + one + `]`, []string{"injection"}},
		{"empty", `{"findings": []}`, []string{}},
		{"prose around", "I looked.\n" + `{"findings":[` + one + `]}` + "\nThat's all.", []string{"injection"}},
		{"fence", "Here:\n```json\n[" + one + "]\n```\nDone.", []string{"injection"}},
		{"bare fence after bad json", "{not json}\n```\n{\"findings\": []}\n```", []string{}},
		{"extra fields ignored", `{"findings":[{"kind":"k","severity":"low","evidence":"e","title":"t"}],"summary":"s"}`, []string{"k"}},
		{"no json", "nothing to report", nil},
		{"object without findings", `{"verdict":"approve"}`, nil},
		{"bad severity", `[{"kind":"k","severity":"urgent","evidence":"e"}]`, nil},
		{"missing evidence", `[{"kind":"k","severity":"low"}]`, nil},
		{"wrong type", `{"findings":{"kind":"k"}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs, err := ParseFindings(tt.text)
			if tt.kinds == nil {
				if !errors.Is(err, ErrFinding) {
					t.Fatalf("ParseFindings = %v, %v; want ErrFinding", fs, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, f := range fs {
				kinds = append(kinds, f.Kind)
				if f.Analyser != "" || f.ID != "" {
					t.Errorf("an agent set analyser/id: %+v", f)
				}
			}
			if strings.Join(kinds, ",") != strings.Join(tt.kinds, ",") {
				t.Errorf("kinds %v, want %v", kinds, tt.kinds)
			}
		})
	}
}

func TestParseFindingsLimit(t *testing.T) {
	t.Parallel()
	item := `{"kind":"k","severity":"low","evidence":"e"},`
	text := "[" + strings.Repeat(item, MaxFindings) + `{"kind":"k","severity":"low","evidence":"e"}]`
	if _, err := ParseFindings(text); !errors.Is(err, ErrFinding) {
		t.Errorf("%d findings accepted: %v", MaxFindings+1, err)
	}
}

func FuzzParseFindings(f *testing.F) {
	for _, s := range []string{
		`{"findings":[{"kind":"k","severity":"low","file":"a.go","line":1,"evidence":"e"}]}`,
		"```json\n[]\n```", `[{"kind":"x"}]`, "text { [ ] }", `{"findings":null}`, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fs, err := ParseFindings(s)
		if err != nil {
			if !errors.Is(err, ErrFinding) {
				t.Fatalf("error does not wrap ErrFinding: %v", err)
			}
			return
		}
		for _, x := range fs {
			y := x
			if err := y.Normalize(); err != nil || y.Kind != x.Kind || y.Evidence != x.Evidence {
				t.Fatalf("a parsed finding is not normalized: %+v (%v)", x, err)
			}
			if len(x.Evidence) > MaxEvidence {
				t.Fatalf("evidence of %d bytes", len(x.Evidence))
			}
		}
		if raw := ExtractJSON(s); raw != nil && !isDoc(string(raw)) {
			t.Fatalf("ExtractJSON returned invalid JSON %q", raw)
		}
	})
}
