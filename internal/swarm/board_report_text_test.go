package swarm

import (
	"regexp"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
)

// TestReportTextUnknownCost: a task whose workers' agents reported
// nothing costs n/a in the text, not $0.0000; measured dollars show.
func TestReportTextUnknownCost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		usage envelope.Usage
		row   string
		total string
	}{
		{"unmeasured", envelope.Usage{}, `(?m)^a +done +1 +w1 +- +- +0/0 +n/a +$`, "usage: 0 input + 0 output tokens, n/a\n"},
		{"measured", envelope.Usage{InputTokens: 10, OutputTokens: 5, USD: 0.25}, `(?m)^a +done +1 +w1 +- +- +10/5 +0\.2500 +$`, "usage: 10 input + 5 output tokens, $0.2500\n"},
	} {
		rep := &Report{Run: "r", Status: "succeeded", Tasks: []TaskReport{{ID: "a", Status: "done", Attempts: 1, Worker: "w1", Usage: c.usage}},
			Totals: Totals{Tasks: 1, Done: 1, Attempts: 1, Usage: c.usage}}
		var b strings.Builder
		if err := rep.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(c.row).MatchString(b.String()) || !strings.Contains(b.String(), c.total) {
			t.Errorf("%s:\n%s", c.name, b.String())
		}
	}
}
