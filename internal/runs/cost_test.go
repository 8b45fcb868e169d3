package runs

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// TestReportUnknownCost: a run whose agent reports nothing, without a
// gateway, has no measured cost: the report says so (known false; n/a in
// the text, never $0.0000) and keeps the tokens.
func TestReportUnknownCost(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	rep := start(t, repo, "version: 1\nagents:\n  sh: {kind: command, argv: [\"true\"]}\ntasks:\n  - {id: a, objective: x, agent: sh, write_scope: [a]}\n", Config{})
	if !rep.OK() {
		t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
	}
	loaded, err := LoadReport(repo.Dir(), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Tasks[0].Usage.Known || loaded.Totals.Usage.Known {
		t.Errorf("usage nothing measured is known: %+v, totals %+v", loaded.Tasks[0].Usage, loaded.Totals.Usage)
	}
	var b strings.Builder
	if err := loaded.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if strings.Contains(text, "0.0000") || !regexp.MustCompile(`(?m)^a +succeeded +1 +no change +\S+ +0/0 +n/a +`).MatchString(text) ||
		!strings.Contains(text, "usage: 0 input + 0 output tokens, n/a\n") {
		t.Errorf("the report claims a cost:\n%s", text)
	}
	js, err := json.Marshal(loaded)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"usage":{"input_tokens":0,"output_tokens":0,"usd":0,"known":false}`) {
		t.Errorf("JSON: %s", js)
	}
}

// TestReportKnownCost: measured dollars are printed, and a total is known
// when any of its parts is.
func TestReportKnownCost(t *testing.T) {
	t.Parallel()
	var tot Totals
	tot.Integrated = map[string]int{}
	priced := TaskReport{ID: "priced", Status: "succeeded", Attempts: 1}
	priced.Usage.add(envelope.Usage{InputTokens: 1200, OutputTokens: 300, USD: 0.0125})
	unmeasured := TaskReport{ID: "unmeasured", Status: "succeeded", Attempts: 1}
	unmeasured.Usage.add(envelope.Usage{})
	tot.add(&priced)
	tot.add(&unmeasured)
	if !priced.Usage.Known || unmeasured.Usage.Known || !tot.Usage.Known || tot.Usage.USD != 0.0125 {
		t.Fatalf("priced %+v, unmeasured %+v, totals %+v", priced.Usage, unmeasured.Usage, tot.Usage)
	}
	rep := &Report{RunID: "r", Status: "succeeded", Tasks: []TaskReport{priced, unmeasured}, Totals: tot}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, re := range []string{`(?m)^priced +succeeded .* 1200/300 +0\.0125 `, `(?m)^unmeasured +succeeded .* 0/0 +n/a `, `usage: 1200 input \+ 300 output tokens, \$0\.0125`} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("no %s in:\n%s", re, text)
		}
	}
}
