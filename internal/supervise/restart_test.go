package supervise

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestIntensity(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name  string
		in    Intensity
		at    []time.Duration // offsets of successive restarts
		allow []bool
	}{
		{"zero allows none", Intensity{}, []time.Duration{0}, []bool{false}},
		{"two in ten", Intensity{Max: 2, Within: 10 * time.Second}, []time.Duration{0, time.Second, 2 * time.Second}, []bool{true, true, false}},
		{"window slides", Intensity{Max: 2, Within: 10 * time.Second}, []time.Duration{0, time.Second, 10 * time.Second, 11 * time.Second, 12 * time.Second}, []bool{true, true, true, true, false}},
		{"refusal not counted", Intensity{Max: 1, Within: 10 * time.Second}, []time.Duration{0, 5 * time.Second, 10 * time.Second}, []bool{true, false, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := tc.in
			for i, off := range tc.at {
				if got := in.Allow(t0.Add(off)); got != tc.allow[i] {
					t.Errorf("restart %d at +%s: %v, want %v", i, off, got, tc.allow[i])
				}
			}
		})
	}
}

// TestSupervisorStrategies: one_for_one restarts the failed member,
// one_for_all also the active others; past the intensity the group
// escalates and names the members to stop; a member of no group escalates.
func TestSupervisorStrategies(t *testing.T) {
	t.Parallel()
	s, err := NewSupervisor([]GroupSpec{
		{Name: "solo", Strategy: OneForOne, MaxRestarts: 1, Within: time.Minute, Members: []string{"a", "b"}},
		{Name: "all", Strategy: OneForAll, MaxRestarts: 2, Within: time.Minute, Members: []string{"x", "y", "z"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 0)
	active := func(m string) bool { return m != "z" } // z is done
	d := s.Failed("a", now, active)
	if d.Escalate || !slices.Equal(d.Restart, []string{"a"}) || d.Group != "solo" {
		t.Errorf("one_for_one: %+v", d)
	}
	d = s.Failed("b", now.Add(time.Second), active)
	if !d.Escalate || !slices.Equal(d.Stop, []string{"a"}) || d.Restart != nil {
		t.Errorf("one_for_one past intensity: %+v", d)
	}
	d = s.Failed("y", now, active)
	if d.Escalate || !slices.Equal(d.Restart, []string{"y", "x"}) {
		t.Errorf("one_for_all: %+v", d)
	}
	s.Failed("x", now, active)
	if d = s.Failed("x", now, active); !d.Escalate || !slices.Equal(d.Stop, []string{"y"}) {
		t.Errorf("one_for_all past intensity: %+v", d)
	}
	if d = s.Failed("loner", now, active); !d.Escalate || d.Group != "" {
		t.Errorf("unsupervised: %+v", d)
	}
	if s.GroupOf("y") != "all" || s.GroupOf("loner") != "" {
		t.Error("GroupOf")
	}
}

func TestNewSupervisorRejects(t *testing.T) {
	t.Parallel()
	for name, specs := range map[string][]GroupSpec{
		"strategy":  {{Name: "g", Strategy: "rest_for_one", Members: []string{"a"}}},
		"dup name":  {{Name: "g", Strategy: OneForOne}, {Name: "g", Strategy: OneForOne}},
		"two homes": {{Name: "g", Strategy: OneForOne, Members: []string{"a"}}, {Name: "h", Strategy: OneForAll, Members: []string{"a"}}},
	} {
		if _, err := NewSupervisor(specs); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
