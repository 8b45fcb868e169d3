package eval

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apiary-dev/apiary/internal/llmfake"
	"github.com/apiary-dev/apiary/internal/plan"
)

// ScriptedUpstreamKey is the stand-in for a real key that the gateways
// send to the scripted model: virtual keys need one to replace.
const ScriptedUpstreamKey = "apiary-eval-scripted-model"

// OptionError is an evaluation asked for with options that do not go
// together; the message names the flag.
type OptionError struct{ Msg string }

func (e *OptionError) Error() string { return e.Msg }

// Request is an evaluation as `apiary eval` is asked for it.
type Request struct {
	// Agent is auto (claude when HasKey, else scripted), scripted (as
	// Claude Code when it is found, else as command agents),
	// scripted-claude, scripted-command, or a profile: a built-in one or
	// one Profiles returns (nil: none).
	Agent    string
	Profiles func() (map[string]plan.Agent, error)
	// HasKey says a real model key is set, which real agents need.
	HasKey bool
	// Claude is Claude Code's executable; "" looks it up with FindClaude
	// for scripted agents (real ones use their profile's).
	Claude     string
	FindClaude func() string
	// TurnS, when not negative, replaces the task set's scripted turn
	// time.
	TurnS float64
	// Seed is the scripted model's.
	Seed uint64
	// Dir is where the repositories are made (created, kept); "" is a
	// temporary directory, removed by Close unless Keep.
	Dir  string
	Keep bool
}

// Setup is an evaluation Prepare made ready to run.
type Setup struct {
	Kind     string     // the agents' name in the report: scripted-claude, scripted-command or the profile's
	Scripted bool       // the task set's scripted agents
	Agent    plan.Agent // every agent's profile
	Claude   string     // Claude Code's executable, "" for the profile's default
	Dir      string     // absolute
	Keep     bool
	ModelURL string // the scripted model's base URL; "" for real agents
	close    []func()
}

// Close stops the scripted model and removes Dir unless it is kept.
func (s *Setup) Close() {
	for i := len(s.close) - 1; i >= 0; i-- {
		s.close[i]()
	}
}

// Prepare resolves r's agents against ts (setting ts's scripted turn time
// when r gives one), makes the work directory and, for scripted agents,
// serves the scripted model on loopback and writes the command agents'
// scripts.
func Prepare(ts *TaskSet, r Request) (s *Setup, err error) {
	s = &Setup{Kind: r.Agent, Claude: r.Claude}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	if s.Kind == "auto" {
		s.Kind = "scripted"
		if r.HasKey {
			s.Kind = "claude"
		}
	}
	if strings.ContainsRune(s.Claude, filepath.Separator) {
		// The agents run in worktrees elsewhere: a relative path would
		// not find it there.
		if s.Claude, err = filepath.Abs(s.Claude); err != nil {
			return s, err
		}
	}
	if s.Kind == "scripted" || s.Kind == "scripted-claude" {
		if s.Claude == "" && r.FindClaude != nil {
			s.Claude = r.FindClaude()
		}
		switch {
		case s.Kind == "scripted" && s.Claude == "":
			s.Kind = "scripted-command"
		case s.Kind == "scripted":
			s.Kind = "scripted-claude"
		case s.Claude == "":
			return s, errors.New("eval: the claude CLI was not found (install it, or pass --claude PATH or --agent scripted-command)")
		}
	}
	s.Scripted = s.Kind == "scripted-claude" || s.Kind == "scripted-command"
	if r.TurnS >= 0 {
		if !s.Scripted || ts.Scripted == nil {
			return s, &OptionError{fmt.Sprintf("--turn-s sets the turn time of a task set's scripted agents; %s agents are not scripted", s.Kind)}
		}
		ts.Scripted.TurnS = r.TurnS
	}
	if !s.Scripted {
		var agents map[string]plan.Agent
		if r.Profiles != nil {
			if agents, err = r.Profiles(); err != nil {
				return s, err
			}
		}
		p, ok := agents[s.Kind]
		switch {
		case ok:
		case slices.Contains(plan.BuiltinAgents(), s.Kind):
			p = plan.Agent{Kind: s.Kind}
		default:
			return s, &OptionError{fmt.Sprintf("--agent %q is neither scripted, scripted-claude, scripted-command, a built-in profile (%v) nor in --agents", s.Kind, plan.BuiltinAgents())}
		}
		if !r.HasKey {
			return s, errors.New("eval: real agents need a model key in $APIARY_MODEL_KEY or $ANTHROPIC_API_KEY: each arm's gateway holds it and hands the agents budgeted virtual keys")
		}
		s.Agent = p
	}

	s.Dir, s.Keep = r.Dir, r.Keep || r.Dir != ""
	if s.Dir == "" {
		if s.Dir, err = os.MkdirTemp("", "apiary-eval-"); err != nil {
			return s, err
		}
	} else if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return s, err
	}
	if !s.Keep {
		dir := s.Dir
		s.close = append(s.close, func() { os.RemoveAll(dir) })
	}
	if s.Dir, err = filepath.Abs(s.Dir); err != nil {
		return s, err
	}
	if s.Scripted {
		// Both kinds run behind the gateways in front of the scripted
		// model; command agents just never call it.
		srv, err := ScriptedModel(ts, r.Seed)
		if err != nil {
			return s, err
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return s, err
		}
		hs := llmfake.Serve(l, srv)
		s.close = append(s.close, func() { hs.Close() })
		s.ModelURL = hs.URL
	}
	switch s.Kind {
	case "scripted-command":
		if s.Agent, err = WriteScriptedAgents(ts, filepath.Join(s.Dir, "agents")); err != nil {
			return s, err
		}
	case "scripted-claude":
		s.Agent = plan.Agent{Kind: "claude", Model: "claude-sonnet-4-5"}
	}
	return s, nil
}

// Output is apiary eval's JSON output: the result, with the agents' name
// and, when kept, the work directory.
type Output struct {
	Dir    string `json:"dir,omitempty"`
	Agents string `json:"agents"`
	*Result
}
