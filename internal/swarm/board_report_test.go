package swarm

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// reportFixture is a finished run: a task won by its hedge, which ran
// with a profile (and model) of its own; a task retried on a profile that
// names no model; a task recorded before attempts named their profile.
func reportFixture() *Report {
	u := func(in, out int64, usd, wall float64) envelope.Usage {
		return envelope.Usage{InputTokens: in, OutputTokens: out, USD: usd, WallS: wall}
	}
	spend := func(attempt, worker, profile, model, outcome string, u envelope.Usage) layout.AttemptSpend {
		return layout.AttemptSpend{Attempt: attempt, Worker: worker, Profile: profile, Model: model, Outcome: outcome, Usage: u}
	}
	r := &Report{Run: "20250101-000000-abcd", Status: "succeeded", Tasks: []TaskReport{
		{ID: "parse", Status: "done", Attempts: 2, Worker: "w2", Workers: []string{"w1", "w2"}, Integrated: "fast-forward", Commit: "0123456789abcdef",
			Usage: u(150234, 5012, 0.6114, 95.2), Spent: []layout.AttemptSpend{
				spend("parse", "w1", "sh", "claude-haiku-4-5", layout.SlotCancelled, u(30111, 1010, 0.0352, 60.5)),
				spend("parse~1", "w2", "fast", "claude-sonnet-4-5", layout.SlotPassed, u(120123, 4002, 0.5762, 34.7)),
			}},
		{ID: "render", Status: "done", Attempts: 2, Worker: "w1", Workers: []string{"w3", "w1"}, Integrated: "merge", Commit: "fedcba9876543210",
			Usage: u(2000, 300, 0, 12), Spent: []layout.AttemptSpend{
				spend("render", "w3", "claude", "", layout.SlotFailed, u(1000, 100, 0, 4)),
				spend("render", "w1", "claude", "", layout.SlotPassed, u(1000, 200, 0, 8)),
			}},
		{ID: "old", Status: "done", Attempts: 1, Worker: "w1", Integrated: "fast-forward", Commit: "00112233445566778899",
			Usage: u(10, 5, 0.0001, 1), Spent: []layout.AttemptSpend{
				{Attempt: "old", Worker: "w1", Outcome: layout.SlotPassed, Usage: u(10, 5, 0.0001, 1)},
			}},
	}}
	r.Totals = Totals{Tasks: 3, Done: 3, Attempts: 5, Usage: u(152244, 5317, 0.6115, 108.2)}
	return r
}

// TestReportText pins the report's text: the tasks, then one row per
// recorded attempt with its worker, profile and model (a profile without
// a model runs its CLI's default; an old record names neither), each
// attempt's row within 80 columns (the tasks' table is wider already).
func TestReportText(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := reportFixture().WriteText(&b); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pinned, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(pinned) {
		t.Errorf("report text changed (go test -run TestReportText -update):\n%s", b.String())
	}
	// The attempts' table, from its header to the totals.
	text := b.String()
	i, j := strings.Index(text, "ATTEMPT "), strings.Index(text, "usage: ")
	if i < 0 || j < i {
		t.Fatalf("no attempts' table before the totals:\n%s", text)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(text[i:j], "\n"), "\n")[1:] {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("an attempt's row of %d columns: %q", n, l)
		}
		f := strings.Fields(l)
		if len(f) < 5 {
			t.Fatalf("attempt row %q", l)
		}
		rows[f[0]+" "+f[1]+" "+f[2]] = strings.TrimSpace(f[3] + " " + strings.Join(f[4:len(f)-3], " "))
	}
	want := map[string]string{
		"parse cancelled w1": "sh (claude-haiku-4-5)", "parse~1 passed w2": "fast (claude-sonnet-4-5)",
		"render failed w3": "claude (default)", "render passed w1": "claude (default)", "old passed w1": "-",
	}
	if len(rows) != len(want) {
		t.Errorf("attempt rows %q; want %d", rows, len(want))
	}
	for k, v := range want {
		if rows[k] != v {
			t.Errorf("attempt %s: profile %q; want %q", k, rows[k], v)
		}
	}
}

// TestReportJSONNamesProfiles: the JSON report carries each attempt's
// profile and model, and leaves them out where a record had none.
func TestReportJSONNamesProfiles(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(reportFixture())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tasks []struct {
			ID    string                       `json:"id"`
			Spent []map[string]json.RawMessage `json:"spent"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"parse":  {`"sh" "claude-haiku-4-5"`, `"fast" "claude-sonnet-4-5"`},
		"render": {`"claude" `, `"claude" `},
		"old":    {" "},
	}
	for _, tr := range got.Tasks {
		var pm []string
		for _, s := range tr.Spent {
			pm = append(pm, string(s["profile"])+" "+string(s["model"]))
		}
		if strings.Join(pm, "|") != strings.Join(want[tr.ID], "|") {
			t.Errorf("task %s: profiles and models %q; want %q", tr.ID, pm, want[tr.ID])
		}
	}
	if len(got.Tasks) != 3 {
		t.Errorf("%d tasks in %s", len(got.Tasks), b)
	}
}
