package sim

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestSweepReportNamesTheSweep: a sweep's report lists the agent counts
// and modes it ran and leaves the single-run Agents and Mode out of its
// parameters, so the JSON never shows a count or mode that was not run.
func TestSweepReportNamesTheSweep(t *testing.T) {
	t.Parallel()
	p := DefaultSwarmParams()
	p.Tasks, p.Seed = 60, 5
	tests := []struct {
		agents []int
		modes  []Mode
		want   []int
	}{
		{[]int{8}, []Mode{ModeSelf}, []int{8}},
		{[]int{64, 8, 8}, []Mode{ModeCentral, ModeSelf}, []int{8, 64}},
	}
	for _, tt := range tests {
		rep, err := SweepSwarm(p, tt.agents, tt.modes)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rep.Agents, tt.want) || !slices.Equal(rep.Modes, tt.modes) || rep.Params.Agents != 0 || rep.Params.Mode != "" {
			t.Errorf("SweepSwarm(%v, %v): agents %v modes %v params agents %d mode %q",
				tt.agents, tt.modes, rep.Agents, rep.Modes, rep.Params.Agents, rep.Params.Mode)
		}
		if len(rep.Results) != len(tt.want)*len(tt.modes) {
			t.Errorf("%d results", len(rep.Results))
		}
		data, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Params map[string]any `json:"params"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if _, ok := doc.Params["mode"]; ok {
			t.Errorf("params of a sweep name a mode: %v", doc.Params)
		}
		if _, ok := doc.Params["agents"]; ok {
			t.Errorf("params of a sweep name an agent count: %v", doc.Params)
		}
		// A report read back with ParseParams gives the shared parameters.
		back, err := ParseParams(data, DefaultSwarmParams())
		if err != nil {
			t.Fatal(err)
		}
		want := p
		want.Agents, want.Mode = DefaultSwarmParams().Agents, DefaultSwarmParams().Mode
		if !reflect.DeepEqual(back, want) {
			t.Errorf("ParseParams(report) = %+v, want %+v", back, want)
		}
	}
}

// TestParseParams: fields override the base, unknown fields and bad JSON
// are ErrParamsFile.
func TestParseParams(t *testing.T) {
	t.Parallel()
	base := DefaultSwarmParams()
	got, err := ParseParams([]byte(`{"median_s": 7, "tasks": 20}`), base)
	if err != nil || got.MedianS != 7 || got.Tasks != 20 || got.P90S != base.P90S {
		t.Errorf("bare object: %+v %v", got, err)
	}
	got, err = ParseParams([]byte(`{"params": {"p90_s": 9}, "results": []}`), base)
	if err != nil || got.P90S != 9 || got.MedianS != base.MedianS {
		t.Errorf("wrapped: %+v %v", got, err)
	}
	for _, bad := range []string{`{"foo": 1}`, `{"params": {"median": 3}}`, `[1]`, `{"tasks": "x"}`, `{} {}`, ``, `{"params": 3}`} {
		if _, err := ParseParams([]byte(bad), base); !errors.Is(err, ErrParamsFile) || !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseParams(%q): %v, want ErrParamsFile", bad, err)
		}
	}
}

func FuzzParseParams(f *testing.F) {
	f.Add([]byte(`{"params": {"median_s": 7, "p90_s": 20, "tasks": 999}}`))
	f.Add([]byte(`{"tasks": 5, "mode": "self", "agents": 3}`))
	f.Add([]byte(`{"foo": 1}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"params": {"write_set": 0}, "fitted": [{"name": "latency_s", "value": 1, "from": "times to drain of 2 benchmark rows"}]}`))
	f.Add([]byte(`{"params": {}, "conditions": [{"fitted": ["x"], "under": "u", "settings": [{"name": "write_set", "value": 1e300}, {"name": "nope", "value": 1}]}]}`))
	f.Add([]byte(`{"params": {}, "conditions": 3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		base := DefaultSwarmParams()
		p, conds, err := ParseParamsFile(data, base)
		if err != nil {
			if !errors.Is(err, ErrParamsFile) {
				t.Fatalf("error %v does not match ErrParamsFile", err)
			}
			if !reflect.DeepEqual(p, base) || conds != nil {
				t.Fatalf("an error changed the parameters: %+v, %+v", p, conds)
			}
			return
		}
		for _, c := range conds {
			_ = c.Warning(p) // any recorded condition renders, never panics
		}
		// Accepted parameters are either valid or rejected by Validate
		// with a typed error, never a panic in the simulator.
		if err := p.Validate(); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate: %v does not match ErrInvalid", err)
			}
			return
		}
		if p.Tasks <= 50 && p.Agents <= 50 && p.Files <= 10000 {
			if _, err := SimulateSwarm(p); err != nil {
				t.Fatalf("valid parameters %+v: %v", p, err)
			}
		}
	})
}

func FuzzParseAgents(f *testing.F) {
	for _, s := range []string{"16,32,...,1024", "10,20,...,60", "8", "1,2,...,3", "16,...", "0", "5,3,...,9", "2,4,...,100000", " 7 , 9 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		counts, err := ParseAgents(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseAgents(%q): %v does not match ErrInvalid", s, err)
			}
			return
		}
		if len(counts) == 0 || len(counts) > 1000 {
			t.Fatalf("ParseAgents(%q): %d counts", s, len(counts))
		}
		for _, c := range counts {
			if c < 1 || c > maxSimAgents {
				t.Fatalf("ParseAgents(%q): count %d", s, c)
			}
		}
		if !strings.Contains(s, "...") && len(counts) != strings.Count(s, ",")+1 {
			t.Fatalf("ParseAgents(%q) = %v: not one count per item", s, counts)
		}
	})
}
