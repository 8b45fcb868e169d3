package eval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/plan"
)

// TestPrepareAgents: auto and scripted resolve by the key and by whether
// Claude Code is found; options that do not go together are
// OptionErrors; real agents need a key.
func TestPrepareAgents(t *testing.T) {
	t.Parallel()
	nowhere := func() string { return "" }
	found := func() string { return "/opt/claude" }
	profiles := func() (map[string]plan.Agent, error) {
		return map[string]plan.Agent{"mine": {Kind: "codex"}}, nil
	}
	for _, tt := range []struct {
		name     string
		r        Request
		kind     string
		scripted bool
		agent    string // the profile's kind
		err      string // "" for none
		option   bool   // the error is an OptionError
	}{
		{"auto without a key", Request{Agent: "auto", FindClaude: nowhere, TurnS: -1}, "scripted-command", true, "command", "", false},
		{"scripted with claude", Request{Agent: "scripted", FindClaude: found, TurnS: -1}, "scripted-claude", true, "claude", "", false},
		{"scripted-claude not found", Request{Agent: "scripted-claude", FindClaude: nowhere, TurnS: -1}, "", false, "", "claude CLI was not found", false},
		{"auto with a key", Request{Agent: "auto", HasKey: true, TurnS: -1}, "claude", false, "claude", "", false},
		{"a profile of the file", Request{Agent: "mine", HasKey: true, Profiles: profiles, TurnS: -1}, "mine", false, "codex", "", false},
		{"no such profile", Request{Agent: "nonesuch", HasKey: true, Profiles: profiles, TurnS: -1}, "", false, "", "is neither scripted", true},
		{"a real agent without a key", Request{Agent: "claude", TurnS: -1}, "", false, "", "need a model key", false},
		{"turn time of real agents", Request{Agent: "claude", HasKey: true, TurnS: 1}, "", false, "", "--turn-s sets", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.r.Dir = filepath.Join(t.TempDir(), "work")
			s, err := Prepare(shipped(t, "eval-parallel"), tt.r)
			var oe *OptionError
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || errors.As(err, &oe) != tt.option {
					t.Fatalf("err = %v, want %q (an OptionError: %v)", err, tt.err, tt.option)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Kind != tt.kind || s.Scripted != tt.scripted || s.Agent.Kind != tt.agent || (s.ModelURL != "") != tt.scripted {
				t.Errorf("setup %+v, want kind %s, scripted %v, profile %s", s, tt.kind, tt.scripted, tt.agent)
			}
		})
	}
}

// TestPrepareDir: a temporary work directory is removed by Close, a
// given one is kept; the turn time replaces the task set's.
func TestPrepareDir(t *testing.T) {
	t.Parallel()
	ts := shipped(t, "eval-parallel")
	s, err := Prepare(ts, Request{Agent: "scripted-command", TurnS: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	if s.Keep || !filepath.IsAbs(s.Dir) || ts.Scripted.TurnS != 0.25 {
		t.Errorf("setup %+v, turn %v", s, ts.Scripted.TurnS)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "agents")); err != nil {
		t.Errorf("no scripted agents: %v", err)
	}
	s.Close()
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary directory is left: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "kept")
	s, err = Prepare(ts, Request{Agent: "scripted-command", TurnS: -1, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(dir); err != nil || !s.Keep {
		t.Errorf("a given directory: kept %v, %v", s.Keep, err)
	}
}
