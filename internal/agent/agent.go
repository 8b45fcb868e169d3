// Package agent launches agent CLIs — Claude Code, Codex, Gemini CLI, aider, or
// any command — as workers: each in its own process group with stdin closed,
// an environment built from an allowlist (never the parent's credentials), a
// private HOME, and output to a log file. On cancellation the whole group gets
// SIGTERM, then SIGKILL after a grace period, and a final sweep kills any
// process still in the group. The CLI's own final report (Claude Code's result
// event, Codex's turn.completed, Gemini's result) is parsed when present; it is
// a hint, never the verdict: apiary's gates decide whether a task is done.
package agent

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Kinds of agent a profile can name.
const (
	KindClaude  = "claude"
	KindCodex   = "codex"
	KindGemini  = "gemini"
	KindAider   = "aider"
	KindCommand = "command"
)

// Kinds lists every supported kind.
var Kinds = []string{KindClaude, KindCodex, KindGemini, KindAider, KindCommand}

// Profile describes how to run one kind of agent. The zero value of every
// field but Kind is a sensible default.
type Profile struct {
	Name string `json:"name" yaml:"-"`
	Kind string `json:"kind" yaml:"kind"`
	// Bin overrides the executable (default: the kind's name on PATH).
	Bin string `json:"bin,omitempty" yaml:"bin"`
	// Argv is the command line of a command agent (Kind "command").
	Argv  []string `json:"argv,omitempty" yaml:"argv"`
	Model string   `json:"model,omitempty" yaml:"model"`
	// Args are appended to the built-in command line.
	Args []string          `json:"args,omitempty" yaml:"args"`
	Env  map[string]string `json:"env,omitempty" yaml:"env"`
	// Tools restricts the built-in tools a Claude Code worker may use
	// (default Read, Edit, Write, Bash, Grep, Glob).
	Tools    []string `json:"tools,omitempty" yaml:"tools"`
	MaxTurns int      `json:"max_turns,omitempty" yaml:"max_turns"`
}

// ErrBadProfile reports a profile that cannot be run.
var ErrBadProfile = errors.New("agent: bad profile")

// Validate checks the profile's kind and required fields.
func (p Profile) Validate() error {
	switch p.Kind {
	case KindClaude, KindCodex, KindGemini, KindAider:
	case KindCommand:
		if len(p.Argv) == 0 {
			return fmt.Errorf("%w: %s: a command agent needs argv", ErrBadProfile, p.Name)
		}
	case "":
		return fmt.Errorf("%w: %s: kind is required (one of %s)", ErrBadProfile, p.Name, strings.Join(Kinds, ", "))
	default:
		return fmt.Errorf("%w: %s: unknown kind %q (one of %s)", ErrBadProfile, p.Name, p.Kind, strings.Join(Kinds, ", "))
	}
	return nil
}

// Builtin returns the built-in profile for a kind name ("claude", "codex",
// "gemini", "aider"), and whether there is one.
func Builtin(name string) (Profile, bool) {
	switch name {
	case KindClaude, KindCodex, KindGemini, KindAider:
		return Profile{Name: name, Kind: name}, true
	}
	return Profile{}, false
}

// Spec is one attempt of one task.
type Spec struct {
	Profile Profile
	// Dir is the worktree the agent works in (its cwd).
	Dir string
	// Prompt is the objective and the references the agent needs: it passes
	// the envelope's path and commit, not file contents.
	Prompt string
	// Envelope is the path of the task envelope JSON.
	Envelope string
	TaskID   string
	RunID    string
	Base     string // base commit
	Trace    string // W3C traceparent
	// Home is the agent's private HOME (and config dir); created if missing.
	Home string
	// BaseURL points the agent's model traffic at the gateway; APIKey is the
	// per-task key it presents there.
	BaseURL string
	APIKey  string
	// MCPConfig is the path of an MCP config file (Claude Code); empty: none.
	MCPConfig string
	// AllowedTools are pre-approved tool patterns (Claude Code), e.g. the MCP
	// write tools.
	AllowedTools []string
	MaxBudgetUSD float64
	// Log receives the agent's stdout and stderr; required.
	Log string
	// Env is added to the allowlisted environment (APIARY_* variables, say).
	Env map[string]string
	// Grace is the time between SIGTERM and SIGKILL; default 5s.
	Grace time.Duration
	// Started, if set, is called with the agent's pid (which is also its
	// process group id) once it has started, before Run waits for it.
	Started func(pid int)
}

// Command returns the argv and environment for the attempt, without starting
// anything. path is the parent's PATH.
func (s Spec) Command(path string) (argv []string, env []string, err error) {
	p := s.Profile
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	bin := p.Bin
	if bin == "" {
		bin = p.Kind
	}
	e := map[string]string{
		"PATH":                path,
		"HOME":                s.Home,
		"LANG":                "C.UTF-8",
		"TERM":                "dumb",
		"NO_COLOR":            "1",
		"GIT_TERMINAL_PROMPT": "0",
		"APIARY_TASK_ID":      s.TaskID,
		"APIARY_RUN_ID":       s.RunID,
		"APIARY_ENVELOPE":     s.Envelope,
		"APIARY_BASE":         s.Base,
	}
	if s.Trace != "" {
		e["TRACEPARENT"] = s.Trace
	}
	switch p.Kind {
	case KindClaude:
		argv = []string{bin, "-p", s.Prompt, "--output-format", "stream-json", "--verbose",
			"--permission-mode", "acceptEdits", "--setting-sources", "project", "--no-session-persistence"}
		tools := p.Tools
		if len(tools) == 0 {
			tools = []string{"Read", "Edit", "Write", "Bash", "Grep", "Glob"}
		}
		argv = append(argv, "--tools", strings.Join(tools, ","))
		allowed := append(append([]string{}, tools...), s.AllowedTools...)
		argv = append(argv, "--allowedTools", strings.Join(allowed, ","))
		if p.Model != "" {
			argv = append(argv, "--model", p.Model)
		}
		if p.MaxTurns > 0 {
			argv = append(argv, "--max-turns", strconv.Itoa(p.MaxTurns))
		}
		if s.MaxBudgetUSD > 0 {
			argv = append(argv, "--max-budget-usd", strconv.FormatFloat(s.MaxBudgetUSD, 'f', -1, 64))
		}
		if s.MCPConfig != "" {
			argv = append(argv, "--mcp-config", s.MCPConfig, "--strict-mcp-config")
		}
		e["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
		e["DISABLE_TELEMETRY"] = "1"
		e["CLAUDE_CONFIG_DIR"] = s.Home + "/.claude"
		if s.BaseURL != "" {
			e["ANTHROPIC_BASE_URL"] = s.BaseURL
		}
		if s.APIKey != "" {
			e["ANTHROPIC_API_KEY"] = s.APIKey
		}
	case KindCodex:
		argv = []string{bin, "exec", "--json", "-s", "workspace-write", "-C", s.Dir, "--skip-git-repo-check"}
		if p.Model != "" {
			argv = append(argv, "-m", p.Model)
		}
		argv = append(argv, s.Prompt)
		e["CODEX_HOME"] = s.Home + "/.codex"
		if s.BaseURL != "" {
			e["OPENAI_BASE_URL"] = s.BaseURL + "/v1"
		}
		if s.APIKey != "" {
			e["OPENAI_API_KEY"] = s.APIKey
			e["CODEX_API_KEY"] = s.APIKey
		}
	case KindGemini:
		argv = []string{bin, "-p", s.Prompt, "--output-format", "stream-json", "--approval-mode", "yolo"}
		if p.Model != "" {
			argv = append(argv, "-m", p.Model)
		}
		e["GEMINI_CLI_NO_RELAUNCH"] = "true"
		if s.BaseURL != "" {
			e["GOOGLE_GEMINI_BASE_URL"] = s.BaseURL
		}
		if s.APIKey != "" {
			e["GEMINI_API_KEY"] = s.APIKey
		}
	case KindAider:
		argv = []string{bin, "--message", s.Prompt, "--yes-always", "--no-auto-commits", "--no-stream", "--no-check-update", "--no-gitignore"}
		if p.Model != "" {
			argv = append(argv, "--model", p.Model)
		}
		if s.BaseURL != "" {
			argv = append(argv, "--openai-api-base", s.BaseURL+"/v1")
		}
		if s.APIKey != "" {
			e["OPENAI_API_KEY"] = s.APIKey
		}
	case KindCommand:
		argv = append([]string{}, p.Argv...)
		if p.Bin != "" {
			argv[0] = p.Bin
		}
		if s.BaseURL != "" {
			e["ANTHROPIC_BASE_URL"] = s.BaseURL
			e["OPENAI_BASE_URL"] = s.BaseURL + "/v1"
		}
		if s.APIKey != "" {
			e["ANTHROPIC_API_KEY"] = s.APIKey
			e["OPENAI_API_KEY"] = s.APIKey
		}
	}
	argv = append(argv, p.Args...)
	for k, v := range p.Env {
		e[k] = v
	}
	for k, v := range s.Env {
		e[k] = v
	}
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+e[k])
	}
	return argv, env, nil
}
