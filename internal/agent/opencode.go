package agent

import (
	"encoding/json"
	"fmt"
	"strings"
)

var opencodeCLI = &cli{
	facts: Facts{
		Kind: KindOpenCode, CLI: "opencode", Package: "npm:opencode-ai", Bin: "opencode", Checked: "1.18.33",
		Headless: "opencode run --format json --pure --auto --title TASK -m PROVIDER/MODEL PROMPT " +
			"(--title: no title-generation call)",
		Home: "OPENCODE_CONFIG_CONTENT per attempt (it outranks a project's opencode.json): the provider with " +
			"its baseURL, the model, the MCP servers; OPENCODE_DISABLE_MODELS_FETCH; state under the private HOME",
		BaseURL:  "provider.<anthropic|openai>.options.baseURL=BASE/v1 (the AI SDK adds /messages or /responses)",
		Key:      "ANTHROPIC_API_KEY or OPENAI_API_KEY, named in the config as {env:…}",
		MCP:      true,
		MCPHow:   "config mcp.NAME {type: local, command: [cmd, args…], environment}",
		ToolName: "apiary_rw_safe_write",
		Report: "sessionID; the text parts of the last step (the summary); step_finish tokens (input + cache " +
			"reads and writes, output + reasoning) and cost, summed over steps; an error event fails the run",
		NeedsHome: true,
	},
	build:  buildOpenCode,
	parser: func() lineParser { return &opencodeParser{} },
}

// opencodeDefaultModel is used when the profile names none.
const opencodeDefaultModel = "anthropic/claude-sonnet-4-5"

func buildOpenCode(b *builder) error {
	s, p := b.s, b.s.Profile
	model := p.Model
	if model == "" {
		model = opencodeDefaultModel
	}
	provider, id, ok := strings.Cut(model, "/")
	if !ok {
		provider, id = "anthropic", model
	}
	keyVar := map[string]string{"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}[provider]
	if keyVar == "" {
		return fmt.Errorf("%w: %s: opencode provider %q: the profile reaches anthropic/… and openai/… models only", ErrUnsupported, p.Name, provider)
	}
	title := s.TaskID
	if title == "" {
		title = "apiary"
	}
	b.argv = []string{b.bin, "run", "--format", "json", "--pure", "--auto", "--title", title, "-m", provider + "/" + id, s.Prompt}
	opts := map[string]any{"apiKey": "{env:" + keyVar + "}"}
	if s.BaseURL != "" {
		opts["baseURL"] = withV1(s.BaseURL)
	}
	cfg := map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"autoupdate":  false,
		"share":       "disabled",
		"model":       provider + "/" + id,
		"small_model": provider + "/" + id,
		"provider": map[string]any{provider: map[string]any{
			"options": opts,
			// Declared, so a model missing from opencode's bundled
			// catalogue still resolves.
			"models": map[string]any{id: map[string]any{"name": id}},
		}},
		"permission": map[string]any{"edit": "allow", "bash": "allow", "webfetch": "deny"},
	}
	if len(s.MCPServers) > 0 {
		servers := map[string]any{}
		for _, m := range s.MCPServers {
			srv := map[string]any{"type": "local", "command": append([]string{m.Command}, m.Args...), "enabled": true}
			if len(m.Env) > 0 {
				srv["environment"] = m.Env
			}
			servers[m.Name] = srv
		}
		cfg["mcp"] = servers
	}
	data, _ := json.Marshal(cfg)
	b.set("OPENCODE_CONFIG_CONTENT", string(data))
	b.env["OPENCODE_DISABLE_MODELS_FETCH"] = "true"
	b.env["OPENCODE_DISABLE_AUTOUPDATE"] = "true"
	// It would fetch language servers from the network when a worker
	// touches a Go or TypeScript file.
	b.env["OPENCODE_DISABLE_LSP_DOWNLOAD"] = "true"
	if s.APIKey != "" {
		b.set(keyVar, s.APIKey)
	}
	return nil
}

// opencodeParser reads opencode run --format json events.
type opencodeParser struct {
	seen    bool
	session string
	text    []string // the text parts of the current step
	last    []string // of the last step that had text
	steps   int
	failed  bool
	in, out int64
	cost    float64
}

func (p *opencodeParser) line(b []byte) {
	var ev struct {
		Type    string          `json:"type"`
		Session string          `json:"sessionID"`
		Error   json.RawMessage `json:"error"`
		Part    struct {
			Text   string  `json:"text"`
			Cost   float64 `json:"cost"`
			Tokens *struct {
				Input     int64 `json:"input"`
				Output    int64 `json:"output"`
				Reasoning int64 `json:"reasoning"`
				Cache     struct {
					Read  int64 `json:"read"`
					Write int64 `json:"write"`
				} `json:"cache"`
			} `json:"tokens"`
		} `json:"part"`
	}
	if json.Unmarshal(b, &ev) != nil || ev.Type == "" {
		return
	}
	p.seen = true
	if ev.Session != "" {
		p.session = ev.Session
	}
	switch ev.Type {
	case "step_start":
		p.text = nil
	case "text":
		p.text = append(p.text, ev.Part.Text)
		p.last = p.text
	case "step_finish":
		p.steps++
		p.cost += ev.Part.Cost
		if t := ev.Part.Tokens; t != nil {
			p.in += t.Input + t.Cache.Read + t.Cache.Write
			p.out += t.Output + t.Reasoning
		}
	case "error":
		p.failed = true
	}
}

func (p *opencodeParser) report() *Report {
	if !p.seen {
		return nil
	}
	r := &Report{Kind: KindOpenCode, SessionID: p.session, Text: bound(strings.Join(p.last, "\n")), Turns: p.steps,
		InputTokens: p.in, OutputTokens: p.out, CostUSD: p.cost, Subtype: "success"}
	if p.failed || p.steps == 0 {
		r.Subtype, r.IsError = "failed", true
	}
	return r
}
