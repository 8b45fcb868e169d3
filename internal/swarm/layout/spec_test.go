package layout

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/plan"
)

// specRun is a run whose two command profiles name different models, and
// a built-in that names none.
var specRun = &Record{Run: "r", Agents: map[string]plan.Agent{
	"sh":     {Kind: "command", Argv: []string{"sh", "a.sh"}, Model: "small-model"},
	"sh2":    {Kind: "command", Argv: []string{"sh", "a.sh"}, Model: "big-model"},
	"claude": {Kind: "claude", Builtin: true},
}}

// TestSpecEndNamesProfiles: each attempt's spend names the profile it ran
// with and the model the run's definition of that profile names — a
// hedge's hedge_agent and its model, a command profile's model kept — and
// an attempt ended without a profile (its host died) names its slot's own
// if it has one.
func TestSpecEndNamesProfiles(t *testing.T) {
	t.Parallel()
	type end struct {
		slot    int
		state   string
		profile string
	}
	tests := []struct {
		name string
		spec Speculation
		ends []end
		want []AttemptSpend
	}{
		{
			name: "hedge with its own profile wins",
			spec: Speculation{Hedge: true, HedgeAfterS: 1, HedgeAgent: "sh2"},
			ends: []end{{1, SlotPassed, "sh2"}, {0, SlotCancelled, "sh"}},
			want: []AttemptSpend{
				{Attempt: "a~1", Worker: "w2", Profile: "sh2", Model: "big-model", Outcome: SlotPassed},
				{Attempt: "a", Worker: "w1", Profile: "sh", Model: "small-model", Outcome: SlotCancelled},
			},
		},
		{
			name: "lapsed attempts",
			spec: Speculation{Hedge: true, HedgeAfterS: 1, HedgeAgent: "sh2"},
			ends: []end{{1, SlotFailed, ""}, {0, SlotFailed, ""}},
			want: []AttemptSpend{
				{Attempt: "a~1", Worker: "w2", Profile: "sh2", Model: "big-model", Outcome: SlotFailed},
				{Attempt: "a", Worker: "w1", Outcome: SlotFailed},
			},
		},
		{
			name: "quorum on the workers' profiles",
			spec: Speculation{N: 2, K: 2},
			ends: []end{{0, SlotPassed, "claude"}, {1, SlotPassed, "sh"}},
			want: []AttemptSpend{
				{Attempt: "a", Worker: "w1", Profile: "claude", Outcome: SlotPassed},
				{Attempt: "a~1", Worker: "w2", Profile: "sh", Model: "small-model", Outcome: SlotPassed},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := board.Task{ID: "r/a", Status: board.TaskRunning, Revision: 7}
			p := &Payload{Name: "a", Spec: &tt.spec}
			if slots := StartSpec(task, p, RunMarker{Worker: "w1", Host: "h1"}, true); !slices.Equal(slots, []int{1}) {
				t.Fatalf("announced %v; want slot 1", slots)
			}
			if err := ClaimRecord(&task, p, RunMarker{Worker: "w2", Host: "h2", Slot: 1}); err != nil {
				t.Fatal(err)
			}
			for i, e := range tt.ends {
				u := envelope.Usage{InputTokens: int64(10 * (i + 1)), WallS: float64(i + 1)}
				tt.want[i].Usage = u
				SpecEnd(specRun, &task, p, SlotEnd{Slot: e.slot, State: e.state, Profile: e.profile, Usage: u, Done: e.state == SlotPassed})
			}
			if !slices.Equal(p.Spent, tt.want) {
				t.Errorf("spent\n%+v\nwant\n%+v", p.Spent, tt.want)
			}
		})
	}
}

// TestModelOf: the model of a defined profile; none for a built-in, an
// unknown profile or a run without a record.
func TestModelOf(t *testing.T) {
	t.Parallel()
	var none *Record
	for _, c := range []struct {
		r       *Record
		profile string
		want    string
	}{{specRun, "sh", "small-model"}, {specRun, "sh2", "big-model"}, {specRun, "claude", ""}, {specRun, "gone", ""}, {none, "sh", ""}} {
		if got := c.r.ModelOf(c.profile); got != c.want {
			t.Errorf("ModelOf(%q) = %q; want %q", c.profile, got, c.want)
		}
	}
}

// TestAttemptSpendOldRecords: a task record written before attempts named
// their profile and model still decodes (both empty), and a spend without
// them is written without the fields.
func TestAttemptSpendOldRecords(t *testing.T) {
	t.Parallel()
	old := `{"name":"a","shard":0,"prio":1,"spent":[{"attempt":"a","worker":"w1","outcome":"passed","usage":{"input_tokens":3,"output_tokens":2,"usd":0.5,"wall_s":1}}]}`
	p, err := DecodePayload(board.Task{ID: "r/a", Payload: json.RawMessage(old)})
	if err != nil {
		t.Fatal(err)
	}
	want := AttemptSpend{Attempt: "a", Worker: "w1", Outcome: SlotPassed, Usage: envelope.Usage{InputTokens: 3, OutputTokens: 2, USD: 0.5, WallS: 1}}
	if len(p.Spent) != 1 || p.Spent[0] != want {
		t.Fatalf("spent %+v; want %+v", p.Spent, want)
	}
	b, err := json.Marshal(p.Spent[0])
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "profile") || strings.Contains(s, "model") {
		t.Errorf("a spend without a profile encodes as %s", s)
	}
	want.Profile, want.Model = "sh2", "big-model"
	if b, err = json.Marshal(want); err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `"profile":"sh2","model":"big-model"`) {
		t.Errorf("a spend with a profile encodes as %s", s)
	}
}
