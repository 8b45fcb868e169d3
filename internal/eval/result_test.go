package eval

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestCompare(t *testing.T) {
	t.Parallel()
	c := func(v float64) *float64 { return &v }
	arm := func(q, time float64, cost *float64) ArmResult {
		return ArmResult{Quality: q, TimeS: time, CostPerAccepted: cost, CostKnown: true}
	}
	unknown := func(a ArmResult) ArmResult {
		a.CostKnown, a.CostPerAccepted, a.CostNote = false, nil, "the gateway saw no model request"
		return a
	}
	tests := []struct {
		name          string
		single, swarm ArmResult
		want          string
	}{
		{"better everywhere", arm(0.5, 100, c(2)), arm(1, 50, c(1)), VerdictSwarm},
		{"faster, else equal", arm(1, 100, c(1)), arm(1, 60, c(1)), VerdictSwarm},
		{"all equal", arm(1, 100, c(1)), arm(1, 100, c(1)), VerdictSingle},
		{"faster but dearer", arm(1, 100, c(1)), arm(1, 40, c(1.5)), VerdictSingle},
		{"faster but worse", arm(1, 100, c(1)), arm(0.75, 40, c(0.5)), VerdictSingle},
		{"single accepted nothing", arm(0, 100, nil), arm(0.5, 100, c(3)), VerdictSwarm},
		{"swarm accepted nothing", arm(0.5, 100, c(3)), arm(0, 10, nil), VerdictSingle},
		{"neither accepted", arm(0, 100, nil), arm(0, 50, nil), VerdictSwarm},
		// Unknown cost is no verdict either way: the other axes decide.
		{"cost unknown, faster", unknown(arm(1, 100, nil)), unknown(arm(1, 60, nil)), VerdictSwarm},
		{"swarm cost unknown, faster", arm(1, 100, c(0.01)), unknown(arm(1, 60, nil)), VerdictSwarm},
		{"single cost unknown, slower", unknown(arm(1, 100, nil)), arm(1, 160, c(0.01)), VerdictSingle},
	}
	for _, tt := range tests {
		got, reasons := Compare(tt.single, tt.swarm)
		if got != tt.want || len(reasons) != 3 {
			t.Errorf("%s: %q %q, want %q", tt.name, got, reasons, tt.want)
		}
		known := tt.single.CostKnown && tt.swarm.CostKnown
		if last := reasons[len(reasons)-1]; known == strings.Contains(last, "n/a, no verdict on this axis") {
			t.Errorf("%s: cost known %v, yet %q", tt.name, known, last)
		}
		// An unknown cost is never compared with a known one.
		if !known && strings.Contains(strings.Join(reasons, "\n"), "$") {
			t.Errorf("%s: a dollar figure beside an unknown cost: %q", tt.name, reasons)
		}
	}
}

// reportFixture is a result as Run fills it in, for the text and chart.
func reportFixture() *Result {
	seed, turn := uint64(1), 2.0
	r := &Result{TaskSet: "kit-parallel", Tasks: 2, Inputs: Inputs{TaskSet: "/sets/kit", Digest: "0123456789abcdef0123",
		Budget: Budget{USD: 5, Tokens: 2_000_000}, Metered: true, Agents: "scripted-claude", AgentKind: "claude", Model: "claude-sonnet-4-5",
		Seed: &seed, ScriptedTurnS: &turn, MaxParallel: map[Arm]int{Single: 1, Swarm: 2},
		Grading: []GradingCheck{{Kind: Visible, Command: "go test ./..."}, {Task: "a", Kind: Hidden, Command: "ha"}, {Task: "b", Kind: Hidden, Command: "hb"}}}}
	arm := func(a Arm, usd float64, tokens int64, timeS float64, passed int, tasks ...TaskOutcome) ArmResult {
		ar := ArmResult{Arm: a, Status: "succeeded", Quality: float64(passed) / 3, ChecksPassed: passed, ChecksTotal: 3, Attempted: 2,
			TimeS: timeS, TimeTo: "last integration", CriticalPathS: timeS - 1, WallS: timeS + 1, Metered: true, CostKnown: true, TokensKnown: true,
			USD: usd, Tokens: tokens, InputTokens: tokens - 1000, OutputTokens: 1000, Tasks: tasks,
			Spend: &Spend{Requests: 9, Refused: 1, Models: []string{"claude-haiku-4-5", "claude-sonnet-4-5"}}}
		for _, t := range tasks {
			if t.Accepted {
				ar.Accepted++
			}
			ar.Messages += 3
		}
		ar.MessagesPerTask = float64(ar.Messages) / 2
		return ar
	}
	ok := func(id string) TaskOutcome {
		return TaskOutcome{ID: id, GateStatus: "succeeded", Integrated: true, ChecksPassed: 1, ChecksTotal: 1, Accepted: true}
	}
	r.Single = arm(Single, 0.30, 90_000, 40, 3, ok("a"), ok("b"))
	r.Swarm = arm(Swarm, 0.24, 72_000, 21.5, 2, ok("a"),
		TaskOutcome{ID: "b", GateStatus: "failed", GateReason: "check go test ./...", ChecksTotal: 1})
	r.Swarm.FromCandidates = []string{"b"}
	r.finish()
	return r
}

// TestWriteText pins the report's text: every input that decides the
// verdict, every axis, each task, and the verdict with its reasons.
func TestWriteText(t *testing.T) {
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
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("report text changed (go test -run TestWriteText -update):\n%s", b.String())
	}
	for _, s := range []string{"$5.00 and 2000000 tokens", "claude-sonnet-4-5", "seed 1", "turn 2.00s", "single 1, swarm 2", "the same 3 checks",
		"0.80x", "verdict: single agent preferred"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the report lacks %q", s)
		}
	}
}

// TestWriteTextUnknownCost: with an unknown cost the report says n/a
// everywhere cost appears, and never prices one arm against the other.
func TestWriteTextUnknownCost(t *testing.T) {
	t.Parallel()
	r := reportFixture()
	r.Swarm.CostKnown, r.Swarm.TokensKnown, r.Swarm.CostNote = false, false, "the gateway saw no model request of this arm"
	r.Single.CostPerAccepted, r.Swarm.CostPerAccepted = nil, nil
	r.finish()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, s := range []string{"cost per accepted task: n/a, no verdict on this axis (swarm: the gateway saw no model request of this arm)",
		"not judged: token amplification n/a (tokens not known)"} {
		if !strings.Contains(text, s) {
			t.Errorf("the report lacks %q:\n%s", s, text)
		}
	}
	if strings.Contains(text, "cost ties") || strings.Contains(text, "swarm better $") || strings.Contains(text, "vs n/a") {
		t.Errorf("the report compares a cost with an unknown one:\n%s", text)
	}
	if r.CostKnown || r.TokenAmplification != nil {
		t.Errorf("cost known %v, amplification %v", r.CostKnown, r.TokenAmplification)
	}
	if ch := r.Chart(); len(ch.Categories) != 2 {
		t.Errorf("the chart shows %v with a cost unknown", ch.Categories)
	}
}

func TestChart(t *testing.T) {
	t.Parallel()
	r := reportFixture()
	ch := r.Chart()
	// quality 1 vs 0.67; time 40 vs 21.5; $/accepted 0.15 vs 0.24.
	want := [][]float64{{1, 1, 0.15 / 0.24}, {2.0 / 3, 21.5 / 40, 1}}
	for i, s := range ch.Series {
		for k, v := range s.Y {
			if math.Abs(v-want[i][k]) > 1e-9 {
				t.Errorf("series %s: %v, want %v", s.Name, s.Y, want[i])
				break
			}
		}
	}
	svg, err := ch.SVG()
	if err != nil {
		t.Fatal(err)
	}
	// Each bar carries its arm's measured figure, series by series.
	var values []string
	for _, m := range regexp.MustCompile(`<text class="value"[^>]*>([^<]*)</text>`).FindAllSubmatch(svg, -1) {
		values = append(values, string(m[1]))
	}
	if want := []string{"1.00", "40.0s", "$0.1500", "0.67", "21.5s", "$0.2400"}; !slices.Equal(values, want) {
		t.Errorf("values on the bars %q, want %q", values, want)
	}
	r.Swarm.CostPerAccepted = nil // priced, but nothing accepted
	if l := r.Chart().Series[1].Labels; len(l) != 3 || l[2] != "none accepted" {
		t.Errorf("swarm labels without an accepted task: %q", l)
	}
}

// TestSetSpend: an arm's cost is known only when the gateway saw its
// requests and can price every model they named; its tokens, when it saw
// any.
func TestSetSpend(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		sp           Spend
		cost, tokens bool
		note         string
	}{
		{"priced", Spend{Requests: 3, InputTokens: 10, OutputTokens: 5, USD: 0.1, Models: []string{"m"}}, true, true, ""},
		{"nothing seen", Spend{}, false, false, "saw no model request"},
		{"refused only", Spend{Refused: 2}, false, false, "saw no model request"},
		{"unpriced", Spend{Requests: 1, InputTokens: 10, Models: []string{"m", "x"}, Unpriced: []string{"x"}}, false, true, "no price for x"},
	}
	for _, tt := range tests {
		var a ArmResult
		a.setSpend(tt.sp)
		if a.CostKnown != tt.cost || a.TokensKnown != tt.tokens || !strings.Contains(a.CostNote, tt.note) || a.Tokens != tt.sp.InputTokens+tt.sp.OutputTokens {
			t.Errorf("%s: cost known %v, tokens known %v, note %q, tokens %d", tt.name, a.CostKnown, a.TokensKnown, a.CostNote, a.Tokens)
		}
	}
}
