package review

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestParseDecision(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want Decision // zero ID: an error is expected
	}{
		{"accepted", "# D-12: Use SQLite\n\nStatus: accepted\n", Decision{ID: "D-12", Title: "Use SQLite", Status: StatusAccepted}},
		{"leading zeros and bold list item", "\n# D-007 — Title\n\n- **Status:** Proposed\n", Decision{ID: "D-7", Title: "Title", Status: StatusProposed}},
		{"superseded", "# D-3: Old\nStatus: superseded by D-015.\n", Decision{ID: "D-3", Title: "Old", Status: StatusSuperseded, SupersededBy: "D-15"}},
		{"first status wins", "# D-1: X\nStatus: rejected\nStatus: accepted\n", Decision{ID: "D-1", Title: "X", Status: StatusRejected}},
		{"no heading", "Status: accepted\n", Decision{}},
		{"heading without id", "# Use SQLite\nStatus: accepted\n", Decision{}},
		{"no status", "# D-1: X\n\nbody\n", Decision{}},
		{"unknown status", "# D-1: X\nStatus: maybe\n", Decision{}},
		{"superseded by nothing", "# D-1: X\nStatus: superseded\n", Decision{}},
		{"empty", "", Decision{}},
		{"constraints", "# D-2: Random ids\n\nStatus: accepted\n\n- **Applies to:** `uuid.go`, `gen/`\nForbids: `\"math/rand\"` and `rand\\.Seed\\(`\n",
			Decision{ID: "D-2", Title: "Random ids", Status: StatusAccepted, AppliesTo: []string{"uuid.go", "gen/"}, Forbids: []string{`"math/rand"`, `rand\.Seed\(`}}},
		{"constraints before the status", "# D-2: X\nForbids: `a+`\nStatus: accepted\n", Decision{ID: "D-2", Title: "X", Status: StatusAccepted, Forbids: []string{"a+"}}},
		{"a bad expression", "# D-2: X\nStatus: accepted\nForbids: `a(`\n", Decision{}},
		{"constraints without backquotes", "# D-2: X\nStatus: accepted\nApplies to: everything\n", Decision{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := ParseDecision("docs/decisions/x.md", []byte(tt.src))
			if tt.want.ID == "" {
				if !errors.Is(err, ErrDecisionFormat) {
					t.Fatalf("ParseDecision = %+v, %v; want ErrDecisionFormat", d, err)
				}
				return
			}
			tt.want.File = "docs/decisions/x.md"
			if err != nil || !reflect.DeepEqual(d, tt.want) {
				t.Fatalf("ParseDecision = %+v, %v; want %+v", d, err, tt.want)
			}
		})
	}
}

func TestFindDecisionRefs(t *testing.T) {
	t.Parallel()
	src := "package x\n\n// decision: D-3\nfunc f() {} // Decisions: D-1, d-02\n# decision:D-9 and decision: nothing\n"
	var got []string
	for _, r := range FindDecisionRefs("x.go", []byte(src)) {
		got = append(got, r.ID+"@"+r.File+":"+string(rune('0'+r.Line)))
	}
	if want := []string{"D-3@x.go:3", "D-1@x.go:4", "D-2@x.go:4", "D-9@x.go:5"}; !slices.Equal(got, want) {
		t.Errorf("refs %v, want %v", got, want)
	}
}

// refsByLine is the obvious implementation FindDecisionRefs must agree
// with: the pattern applied line by line.
func refsByLine(file string, src []byte) []DecisionRef {
	re := regexp.MustCompile(`\b[dD][eE][cC][iI][sS][iI][oO][nN][sS]?[ \t]*:[ \t]*([dD]-[0-9]{1,6}(?:[ \t]*,[ \t]*[dD]-[0-9]{1,6})*)`)
	var out []DecisionRef
	for i, line := range strings.Split(string(src), "\n") {
		for _, m := range re.FindAllStringSubmatch(line, -1) {
			for _, id := range refID.FindAllStringSubmatch(m[1], -1) {
				out = append(out, DecisionRef{ID: "D-" + id[1], File: file, Line: i + 1})
			}
		}
	}
	return out
}

func FuzzFindDecisionRefs(f *testing.F) {
	f.Add("// decision: D-3\nx := 1 // Decisions: D-1, d-02\n")
	f.Add("undecision: D-1 decision:D-2decision: D-3,\nD-4")
	f.Add("DECISIONS :\tD-0007 , D-8")
	f.Fuzz(func(t *testing.T, src string) {
		got, want := FindDecisionRefs("f", []byte(src)), refsByLine("f", []byte(src))
		if !slices.Equal(got, want) {
			t.Fatalf("FindDecisionRefs(%q) = %v, want %v", src, got, want)
		}
	})
}

func FuzzParseDecision(f *testing.F) {
	f.Add("# D-12: Use SQLite\n\nStatus: accepted\n")
	f.Add("# D-3: Old\n- **Status:** superseded by D-4\n")
	f.Add("\ufeff# D-0001 - x\nstatus:deprecated")
	f.Fuzz(func(t *testing.T, src string) {
		d, err := ParseDecision("d.md", []byte(src))
		if err != nil {
			if !errors.Is(err, ErrDecisionFormat) {
				t.Fatalf("error does not wrap ErrDecisionFormat: %v", err)
			}
			return
		}
		if !strings.HasPrefix(d.ID, "D-") || d.Title == "" || (d.Status == StatusSuperseded) != (d.SupersededBy != "") {
			t.Fatalf("inconsistent decision %+v", d)
		}
		for _, r := range FindDecisionRefs("f", []byte(src)) {
			if !strings.HasPrefix(r.ID, "D-") || r.Line < 1 {
				t.Fatalf("bad reference %+v", r)
			}
		}
	})
}

func TestDecisionsGate(t *testing.T) {
	t.Parallel()
	rec := func(id, title, status string) string {
		return "# " + id + ": " + title + "\n\nStatus: " + status + "\n"
	}
	c := changeOf(t,
		map[string]string{
			"docs/decisions/D-1-a.md":   rec("D-1", "Gates commit", "accepted"),
			"docs/decisions/D-2-b.md":   rec("D-2", "Use SQLite", "accepted"),
			"docs/decisions/README.md":  "# About\n\nRefer with decision: D-99.\n",
			"a.go":                      "package x\n\n// decision: D-1\nfunc A() {}\n",
			"b.go":                      "package x\n\n// decision: D-9\n",
			"c.go":                      "package x\n\n// decision: D-2\n",
			"testdata/fixture.txt":      "decision: D-404\n",
			"docs/decisions/D-5-old.md": rec("D-5", "Old", "accepted"),
			"e.go":                      "package x\n\n// decision: D-5\n",
		},
		map[string]string{
			"docs/decisions/D-2-b.md":   rec("D-2", "Use SQLite", "superseded by D-3"),
			"docs/decisions/D-3-c.md":   rec("D-3", "Use etcd", "accepted"),
			"docs/decisions/D-4-bad.md": "# D-4: No status\n",
			"docs/decisions/D-5-old.md": "",
			"a.go":                      "package x\n\n// decision: D-1\nfunc A() { _ = 1 }\n",
			"new.go":                    "package x\n\n// decision: D-7\n// decision: D-3\n",
		})
	fs, err := Decisions{}.Analyse(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"decision info docs/decisions/D-1-a.md",   // a.go changed and refers to it
		"decision info docs/decisions/D-2-b.md",   // its record changed
		"decision info docs/decisions/D-3-c.md",   // added, and new.go refers to it
		"decision info docs/decisions/D-5-old.md", // its record was deleted
		"decision info ",                          // D-7: new.go refers to it (missing)
		"decision-format high docs/decisions/D-4-bad.md",
		"decision-missing high e.go:3",   // D-5 removed while e.go refers to it
		"decision-missing high new.go:3", // D-7 never existed
		"decision-missing low b.go:3",    // stale before the change: not its doing
		"decision-superseded high c.go:3",
	}
	slices.Sort(want)
	if got := summary(fs); !slices.Equal(got, want) {
		t.Errorf("findings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		for _, f := range fs {
			t.Logf("  %s %s: %s", f.Kind, f.Where(), f.Evidence)
		}
	}
}

// TestDecisionContradictions: a change that adds what an accepted decision
// forbids, where it applies, is blocked citing it — even when the same
// change also edits the record to lift the rule (the base's records are
// the rules); building on a rejected decision is high too.
func TestDecisionContradictions(t *testing.T) {
	t.Parallel()
	const ids = "# D-1: IDs come from crypto/rand\n\nStatus: accepted\nApplies to: `uuid.go`, `gen/`\nForbids: `\"math/rand\"`, `rand\\.Seed\\(`\n"
	const marked = "# D-2: Parsing never allocates\n\nStatus: accepted\nForbids: `make\\(`\n"
	const rejected = "# D-3: Use a global generator\n\nStatus: rejected\n"
	base := map[string]string{
		"docs/decisions/D-1-ids.md":    ids,
		"docs/decisions/D-2-parse.md":  marked,
		"docs/decisions/D-3-global.md": rejected,
		"uuid.go":                      "package uuid\n\nimport \"crypto/rand\"\n\nvar _ = rand.Reader\n",
		"parse.go":                     "package uuid\n\n// decision: D-2\nfunc Parse(s string) {}\n",
		"other.go":                     "package uuid\n\nfunc f() { _ = make([]int, 1) }\n",
	}
	c := changeOf(t, base, map[string]string{
		"docs/decisions/D-1-ids.md": strings.Replace(ids, "Forbids: `\"math/rand\"`, `rand\\.Seed\\(`\n", "", 1),
		"uuid.go":                   "package uuid\n\nimport \"math/rand\"\n\nvar _ = rand.Int\n",
		"gen/gen.go":                "package gen\n\nimport \"crypto/rand\"\n\nvar _ = rand.Reader\n",
		"parse.go":                  "package uuid\n\n// decision: D-2\nfunc Parse(s string) { _ = make([]byte, len(s)) }\n",
		"other.go":                  "package uuid\n\nfunc f() { _ = make([]int, 2) }\n", // D-2 does not apply here
		"global.go":                 "package uuid\n\n// decision: D-3\nvar global = 1\n",
	})
	fs, err := Decisions{}.Analyse(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		if f.Kind != KindDecision {
			got = append(got, fmt.Sprintf("%s %s %s %v", f.Kind, f.Severity, f.Where(), f.Decisions))
		}
	}
	slices.Sort(got)
	want := []string{
		"decision-contradiction high parse.go:4 [D-2]",
		"decision-contradiction high uuid.go:3 [D-1]",
		"decision-status high global.go:3 [D-3]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, f := range fs {
		if f.Kind == KindDecisionContradiction && !strings.Contains(f.Evidence, "forbids") {
			t.Errorf("evidence %q", f.Evidence)
		}
	}
	// The decisions the change touches include those whose paths changed.
	touched := map[string]bool{}
	for _, f := range fs {
		if f.Kind == KindDecision {
			touched[f.Decisions[0]] = true
		}
	}
	if !touched["D-1"] || !touched["D-2"] || !touched["D-3"] {
		t.Errorf("touched %v", touched)
	}
}
