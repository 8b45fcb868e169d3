package review

import (
	"errors"
	"strings"
	"testing"
)

// TestParseReviewerAnswer: a reviewer's answer is a JSON verdict, possibly
// wrapped in prose or a code fence; anything else is a typed error, and
// objections are normalized findings of kind objection whose id and
// analyser the reviewer cannot choose.
func TestParseReviewerAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		text       string
		verdict    string
		objections int
		kind       string // of the first objection
		err        bool
	}{
		{name: "approve", text: `{"verdict":"approve","summary":"fine"}`, verdict: VerdictApprove},
		{name: "case and space", text: `{"verdict":"  BLOCK ","objections":[{"severity":"High","evidence":"x"}]}`, verdict: VerdictBlock, objections: 1, kind: KindObjection},
		{name: "fenced in prose", text: "I looked.\n```json\n{\"verdict\": \"block\", \"objections\": [{\"kind\": \"race\", \"severity\": \"medium\", \"file\": \"a.go\", \"line\": 3, \"evidence\": \"unguarded map\"}]}\n```\nDone.",
			verdict: VerdictBlock, objections: 1, kind: "race"},
		{name: "no JSON", text: "I approve.", err: true},
		{name: "array", text: `[{"verdict":"approve"}]`, err: true},
		{name: "unknown verdict", text: `{"verdict":"maybe"}`, err: true},
		{name: "missing verdict", text: `{"summary":"?"}`, err: true},
		{name: "bad severity", text: `{"verdict":"block","objections":[{"severity":"dire","evidence":"x"}]}`, err: true},
		{name: "path escapes", text: `{"verdict":"block","objections":[{"severity":"low","file":"../x","evidence":"x"}]}`, err: true},
		{name: "empty evidence", text: `{"verdict":"block","objections":[{"severity":"low"}]}`, err: true},
		{name: "too many", text: `{"verdict":"block","objections":[` + strings.Repeat(`{"severity":"low","evidence":"x"},`, MaxFindings) + `{"severity":"low","evidence":"x"}]}`, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := parseReviewerAnswer(tt.text)
			if tt.err {
				if !errors.Is(err, ErrFinding) {
					t.Fatalf("err %v, want ErrFinding", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Verdict != tt.verdict || len(a.Objections) != tt.objections {
				t.Fatalf("answer %+v", a)
			}
			if tt.objections > 0 && a.Objections[0].Kind != tt.kind {
				t.Errorf("kind %q, want %q", a.Objections[0].Kind, tt.kind)
			}
		})
	}
	// A reviewer cannot forge the id or analyser of its objections.
	a, err := parseReviewerAnswer(`{"verdict":"block","objections":[{"id":"secrets/1","analyser":"secrets","severity":"low","evidence":"x"}]}`)
	if err != nil || a.Objections[0].ID != "" || a.Objections[0].Analyser != "" {
		t.Errorf("forged objection %+v (%v)", a.Objections, err)
	}
}

// FuzzParseReviewerAnswer: any text either fails with ErrFinding or
// yields a known verdict and valid objections.
func FuzzParseReviewerAnswer(f *testing.F) {
	for _, s := range []string{
		`{"verdict":"approve"}`,
		"```json\n{\"verdict\":\"block\",\"objections\":[{\"severity\":\"high\",\"file\":\"a.go\",\"line\":2,\"evidence\":\"e\"}]}\n```",
		`{"verdict":"block","objections":[{"severity":"low","file":"/etc/passwd","evidence":"e"}]}`,
		`text {"verdict": 3}`,
		`{`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		a, err := parseReviewerAnswer(text)
		if err != nil {
			if !errors.Is(err, ErrFinding) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if a.Verdict != VerdictApprove && a.Verdict != VerdictBlock {
			t.Fatalf("verdict %q", a.Verdict)
		}
		for _, o := range a.Objections {
			n := o
			if err := n.Normalize(); err != nil || o.Evidence == "" || o.ID != "" || o.Analyser != "" {
				t.Fatalf("objection %+v (%v)", o, err)
			}
		}
	})
}
