package agent

import (
	"encoding/json"
	"strconv"
	"strings"
)

var claudeCLI = &cli{
	facts: Facts{
		Kind: KindClaude, CLI: "Claude Code", Package: "npm:@anthropic-ai/claude-code", Bin: "claude", Checked: "2.1.332",
		Headless: "claude -p PROMPT --output-format stream-json --verbose --permission-mode acceptEdits " +
			"--setting-sources project --no-session-persistence --tools … --allowedTools …",
		Home:     "CLAUDE_CONFIG_DIR=$HOME/.claude; MCP servers in $HOME/.apiary-mcp.json",
		BaseURL:  "ANTHROPIC_BASE_URL=BASE (Claude Code adds /v1/messages)",
		Key:      "ANTHROPIC_API_KEY (sent as x-api-key)",
		MCP:      true,
		MCPHow:   "--mcp-config FILE --strict-mcp-config; tools pre-approved with --allowedTools mcp__NAME",
		ToolName: "mcp__apiary__rw_safe_write",
		Report: "the result event: subtype, is_error, result, session_id, num_turns, total_cost_usd, " +
			"modelUsage (every model, cache reads and writes included) else usage",
		NeedsHome: true,
	},
	build:  buildClaude,
	parser: func() lineParser { return &claudeParser{} },
}

func buildClaude(b *builder) error {
	s, p := b.s, b.s.Profile
	b.argv = []string{b.bin, "-p", s.Prompt, "--output-format", "stream-json", "--verbose",
		"--permission-mode", "acceptEdits", "--setting-sources", "project", "--no-session-persistence"}
	tools := p.Tools
	if len(tools) == 0 {
		tools = []string{"Read", "Edit", "Write", "Bash", "Grep", "Glob"}
	}
	b.argv = append(b.argv, "--tools", strings.Join(tools, ","))
	allowed := append(append([]string{}, tools...), s.AllowedTools...)
	for _, m := range s.MCPServers {
		allowed = append(allowed, "mcp__"+m.Name)
	}
	b.argv = append(b.argv, "--allowedTools", strings.Join(allowed, ","))
	if p.Model != "" {
		b.argv = append(b.argv, "--model", p.Model)
	}
	if p.MaxTurns > 0 {
		b.argv = append(b.argv, "--max-turns", strconv.Itoa(p.MaxTurns))
	}
	if s.MaxBudgetUSD > 0 {
		b.argv = append(b.argv, "--max-budget-usd", strconv.FormatFloat(s.MaxBudgetUSD, 'f', -1, 64))
	}
	var configs []string
	if s.MCPConfig != "" {
		configs = append(configs, s.MCPConfig)
	}
	if len(s.MCPServers) > 0 {
		configs = append(configs, b.file(".apiary-mcp.json", mcpJSON(s.MCPServers)))
	}
	for _, c := range configs {
		b.argv = append(b.argv, "--mcp-config", c)
	}
	if len(configs) > 0 {
		b.argv = append(b.argv, "--strict-mcp-config")
	}
	b.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
	b.env["DISABLE_TELEMETRY"] = "1"
	b.set("CLAUDE_CONFIG_DIR", s.Home+"/.claude")
	if s.BaseURL != "" {
		b.set("ANTHROPIC_BASE_URL", root(s.BaseURL))
	}
	if s.APIKey != "" {
		b.set("ANTHROPIC_API_KEY", s.APIKey)
	}
	return nil
}

// mcpJSON is the {"mcpServers": …} file Claude Code reads (and command
// agents get, as APIARY_MCP_CONFIG).
func mcpJSON(servers []MCPServer) []byte {
	m := map[string]any{}
	for _, s := range servers {
		srv := map[string]any{"type": "stdio", "command": s.Command, "args": nonNil(s.Args)}
		if len(s.Env) > 0 {
			srv["env"] = s.Env
		}
		m[s.Name] = srv
	}
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": m}, "", "  ")
	return b
}

func nonNil(a []string) []string {
	if a == nil {
		return []string{}
	}
	return a
}

// claudeParser reads Claude Code's stream-json: the result event is the
// report.
type claudeParser struct {
	session string
	rep     *Report
}

func (p *claudeParser) line(b []byte) {
	var ev struct {
		Type    string  `json:"type"`
		Subtype string  `json:"subtype"`
		IsError bool    `json:"is_error"`
		Cost    float64 `json:"total_cost_usd"`
		Turns   int     `json:"num_turns"`
		Session string  `json:"session_id"`
		Result  string  `json:"result"`
		Denials []any   `json:"permission_denials"`
		Usage   *struct {
			Input       int64 `json:"input_tokens"`
			CacheCreate int64 `json:"cache_creation_input_tokens"`
			CacheRead   int64 `json:"cache_read_input_tokens"`
			Output      int64 `json:"output_tokens"`
		} `json:"usage"`
		ModelUsage map[string]struct {
			Input       int64 `json:"inputTokens"`
			Output      int64 `json:"outputTokens"`
			CacheRead   int64 `json:"cacheReadInputTokens"`
			CacheCreate int64 `json:"cacheCreationInputTokens"`
		} `json:"modelUsage"`
	}
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" && ev.Session != "" {
			p.session = ev.Session
		}
	case "result":
		r := &Report{Kind: KindClaude, Subtype: ev.Subtype, IsError: ev.IsError, CostUSD: ev.Cost, Turns: ev.Turns,
			SessionID: ev.Session, Text: bound(ev.Result), PermissionDenials: len(ev.Denials)}
		if r.SessionID == "" {
			r.SessionID = p.session
		}
		switch {
		case len(ev.ModelUsage) > 0:
			// modelUsage covers every model the run used (a small model's
			// side calls too); usage is the main loop's alone.
			for _, u := range ev.ModelUsage {
				r.InputTokens += u.Input + u.CacheRead + u.CacheCreate
				r.OutputTokens += u.Output
			}
		case ev.Usage != nil:
			r.InputTokens = ev.Usage.Input + ev.Usage.CacheCreate + ev.Usage.CacheRead
			r.OutputTokens = ev.Usage.Output
		}
		p.rep = r
	}
}

func (p *claudeParser) report() *Report { return p.rep }
