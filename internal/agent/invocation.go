package agent

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Invocation is everything one attempt needs before it starts: the command
// line, the environment and the files of the CLI's private configuration.
type Invocation struct {
	Argv []string
	Env  []string // KEY=VALUE, sorted
	// Files are written (mode 0600, directories 0700) before the agent
	// starts; their paths are under Spec.Home.
	Files []File
}

// File is one configuration file of an attempt.
type File struct {
	Path string
	Data []byte
}

// builder collects an invocation; the per-CLI files fill it.
type builder struct {
	s     *Spec
	bin   string
	argv  []string
	env   map[string]string
	own   map[string]bool // set by the profile to reach the attempt's gateway: not overridable
	files []File
}

// set puts a variable the profile owns: a profile's or spec's Env cannot
// replace it, so no configuration can send the agent's traffic around the
// attempt's gateway or into another config home.
func (b *builder) set(k, v string) {
	b.env[k] = v
	b.own[k] = true
}

func (b *builder) file(rel string, data []byte) string {
	p := filepath.Join(b.s.Home, rel)
	b.files = append(b.files, File{Path: p, Data: data})
	return p
}

// Invocation returns the command line, environment and configuration files
// for the attempt, without writing or starting anything. path is the
// parent's PATH.
func (s Spec) Invocation(path string) (Invocation, error) {
	p := s.Profile
	if err := p.Validate(); err != nil {
		return Invocation{}, err
	}
	c := cliOf(p.Kind)
	for _, m := range s.MCPServers {
		if err := m.validate(); err != nil {
			return Invocation{}, err
		}
	}
	if len(s.MCPServers) > 0 && !c.facts.MCP {
		return Invocation{}, fmt.Errorf("%w: %s: %s has no MCP client; give it no MCP servers", ErrUnsupported, p.Name, c.facts.CLI)
	}
	if c.facts.NeedsHome && s.Home == "" {
		return Invocation{}, fmt.Errorf("%w: %s: %s needs a private home for its configuration (Spec.Home)", ErrBadProfile, p.Name, c.facts.CLI)
	}
	if s.Home != "" && !filepath.IsAbs(s.Home) {
		return Invocation{}, fmt.Errorf("%w: %s: home %q is not an absolute path", ErrBadProfile, p.Name, s.Home)
	}
	bin := p.Bin
	if bin == "" {
		bin = c.facts.Bin
	}
	b := &builder{s: &s, bin: bin, env: map[string]string{}, own: map[string]bool{}}
	for k, v := range map[string]string{
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
	} {
		b.env[k] = v
	}
	b.own["HOME"] = true
	if s.Trace != "" {
		b.env["TRACEPARENT"] = s.Trace
	}
	if err := c.build(b); err != nil {
		return Invocation{}, err
	}
	argv := append(b.argv, p.Args...)
	expand := strings.NewReplacer("{{base_url}}", s.BaseURL, "{{api_key}}", s.APIKey)
	for _, extra := range []map[string]string{p.Env, s.Env} {
		for k, v := range extra {
			if !b.own[k] {
				b.env[k] = expand.Replace(v)
			}
		}
	}
	keys := make([]string, 0, len(b.env))
	for k := range b.env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		env = append(env, k+"="+b.env[k])
	}
	return Invocation{Argv: argv, Env: env, Files: b.files}, nil
}

// Command returns the argv and environment for the attempt, without
// starting anything; Invocation also lists the files Run writes first.
// path is the parent's PATH.
func (s Spec) Command(path string) (argv []string, env []string, err error) {
	inv, err := s.Invocation(path)
	return inv.Argv, inv.Env, err
}

// withV1 is a base URL with the /v1 the OpenAI-style and AI-SDK clients
// expect; BaseURL is the root.
func withV1(base string) string {
	base = strings.TrimSuffix(base, "/")
	if strings.HasSuffix(base, "/v1") {
		return base
	}
	return base + "/v1"
}

// root is a base URL without a trailing /v1, as Claude Code and Gemini CLI
// expect (they add the version themselves).
func root(base string) string {
	return strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1")
}

func errNoHomeForMCP(name string) error {
	return fmt.Errorf("%w: %s: MCP servers need a private home for their config file (Spec.Home)", ErrBadProfile, name)
}
