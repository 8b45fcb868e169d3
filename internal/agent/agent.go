// Package agent launches agent CLIs — Claude Code, Codex, Gemini CLI,
// opencode, aider, or any command — as workers: each in its own process
// group with stdin closed, an environment built from an allowlist (never the
// parent's credentials), a private HOME holding the CLI's own configuration
// for this attempt, and output to a log file. On cancellation the whole group
// gets SIGTERM, then SIGKILL after a grace period, and a final sweep kills
// any process still in the group.
//
// Each built-in profile knows its CLI's headless flags, where it reads its
// configuration (written fresh under the attempt's HOME: Codex's
// CODEX_HOME/config.toml, Gemini CLI's settings.json, opencode's inline
// config), the form in which it takes the model base URL, how it configures
// MCP servers, and how to read its final report (see Table and
// docs/agents.md). The report is a hint, never the verdict: apiary's gates
// decide whether a task is done.
package agent

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Kinds of agent a profile can name.
const (
	KindClaude   = "claude"
	KindCodex    = "codex"
	KindGemini   = "gemini"
	KindOpenCode = "opencode"
	KindAider    = "aider"
	KindCommand  = "command"
)

// Kinds lists every supported kind.
var Kinds = []string{KindClaude, KindCodex, KindGemini, KindOpenCode, KindAider, KindCommand}

// Profile describes how to run one kind of agent. The zero value of every
// field but Kind is a sensible default.
type Profile struct {
	Name string `json:"name" yaml:"-"`
	Kind string `json:"kind" yaml:"kind"`
	// Bin overrides the executable (default: the CLI's name on PATH).
	Bin string `json:"bin,omitempty" yaml:"bin"`
	// Argv is the command line of a command agent (Kind "command").
	Argv  []string `json:"argv,omitempty" yaml:"argv"`
	Model string   `json:"model,omitempty" yaml:"model"`
	// Args are appended to the built-in command line.
	Args []string `json:"args,omitempty" yaml:"args"`
	// Env is added to the agent's environment. In its values {{base_url}}
	// and {{api_key}} become the attempt's model base URL and key, so a
	// command agent can name them in the form its client reads (an AI-SDK
	// client wants ANTHROPIC_BASE_URL with /v1, say). It cannot replace
	// what a built-in profile sets to reach the attempt's gateway (the base
	// URL, the key, the private config home).
	Env map[string]string `json:"env,omitempty" yaml:"env"`
	// Tools restricts the built-in tools a Claude Code worker may use
	// (default Read, Edit, Write, Bash, Grep, Glob).
	Tools    []string `json:"tools,omitempty" yaml:"tools"`
	MaxTurns int      `json:"max_turns,omitempty" yaml:"max_turns"`
}

// Errors. Every error this package returns for a profile or spec it cannot
// run wraps ErrBadProfile; a feature the CLI or the platform lacks wraps
// ErrUnsupported.
var (
	ErrBadProfile  = errors.New("agent: bad profile")
	ErrUnsupported = errors.New("agent: unsupported")
)

// Validate checks the profile's kind and required fields.
func (p Profile) Validate() error {
	switch p.Kind {
	case KindClaude, KindCodex, KindGemini, KindOpenCode, KindAider:
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
// "gemini", "opencode", "aider"), and whether there is one.
func Builtin(name string) (Profile, bool) {
	switch name {
	case KindClaude, KindCodex, KindGemini, KindOpenCode, KindAider:
		return Profile{Name: name, Kind: name}, true
	}
	return Profile{}, false
}

// MCPServer is one stdio MCP server an agent is given, in neutral form;
// each profile renders it into its CLI's own configuration. Env is the
// server's environment (a capability goes here, never on a command line).
type MCPServer struct {
	// Name is how the agent knows the server ("apiary"): letters, digits,
	// '_' and '-'. CLIs build tool names from it (Claude Code:
	// mcp__apiary__rw_safe_write).
	Name    string            `json:"name"`
	Command string            `json:"command"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

var serverNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func (m MCPServer) validate() error {
	if !serverNameRe.MatchString(m.Name) {
		return fmt.Errorf("%w: MCP server name %q: want 1 to 64 letters, digits, '_' or '-'", ErrBadProfile, m.Name)
	}
	if m.Command == "" {
		return fmt.Errorf("%w: MCP server %s: no command", ErrBadProfile, m.Name)
	}
	return nil
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
	// Home is the agent's private HOME, created if missing. The CLI's
	// configuration for this attempt is written under it; built-in kinds
	// require it.
	Home string
	// BaseURL is the root of the model API the agent talks to — the
	// attempt's gateway, without /v1 — and APIKey the key it presents
	// there. Each profile passes them in the form its CLI reads.
	BaseURL string
	APIKey  string
	// MCPServers are the MCP servers the agent gets, rendered into its
	// CLI's configuration; their tools are pre-approved.
	MCPServers []MCPServer
	// MCPConfig is the path of a ready Claude Code MCP config file, passed
	// with --mcp-config (Claude Code only); MCPServers is the portable form.
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
