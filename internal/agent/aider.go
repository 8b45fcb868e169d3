package agent

var aiderCLI = &cli{
	facts: Facts{
		Kind: KindAider, CLI: "aider", Package: "pypi:aider-chat", Bin: "aider",
		// Untested: aider installs only from PyPI, which this project's
		// machines cannot reach. The flags match its documentation.
		Checked: "",
		Headless: "aider --message PROMPT --yes-always --no-auto-commits --no-stream --no-check-update " +
			"--no-gitignore [--model MODEL]",
		Home:    "none (it reads the worktree and HOME)",
		BaseURL: "--openai-api-base BASE/v1",
		Key:     "OPENAI_API_KEY",
		MCP:     false,
		MCPHow:  "none: aider has no MCP client (a spec with MCP servers is refused with ErrUnsupported)",
		Report:  "none: apiary reads the worktree",
	},
	build: func(b *builder) error {
		s, p := b.s, b.s.Profile
		b.argv = []string{b.bin, "--message", s.Prompt, "--yes-always", "--no-auto-commits", "--no-stream", "--no-check-update", "--no-gitignore"}
		if p.Model != "" {
			b.argv = append(b.argv, "--model", p.Model)
		}
		if s.BaseURL != "" {
			b.argv = append(b.argv, "--openai-api-base", withV1(s.BaseURL))
		}
		if s.APIKey != "" {
			b.set("OPENAI_API_KEY", s.APIKey)
		}
		return nil
	},
}

var commandCLI = &cli{
	facts: Facts{
		Kind: KindCommand, CLI: "any command", Bin: "(argv[0])",
		Headless: "its argv, as given; the prompt is in the envelope (APIARY_ENVELOPE)",
		Home:     "none; MCP servers in $HOME/.apiary-mcp.json (Claude Code's format), named by APIARY_MCP_CONFIG",
		BaseURL: "ANTHROPIC_BASE_URL=BASE (the official SDKs' form), OPENAI_BASE_URL=BASE/v1, " +
			"APIARY_BASE_URL=BASE; env values may say {{base_url}} for another form (an AI-SDK client wants " +
			"ANTHROPIC_BASE_URL=BASE/v1)",
		Key:    "ANTHROPIC_API_KEY, OPENAI_API_KEY; {{api_key}} in env values; the profile's model in APIARY_MODEL",
		MCP:    true,
		MCPHow: "APIARY_MCP_CONFIG names an {\"mcpServers\": …} file",
		Report: "none",
	},
	build: func(b *builder) error {
		s, p := b.s, b.s.Profile
		b.argv = append([]string{}, p.Argv...)
		if p.Bin != "" {
			b.argv[0] = p.Bin
		}
		if s.BaseURL != "" {
			b.env["ANTHROPIC_BASE_URL"] = root(s.BaseURL)
			b.env["OPENAI_BASE_URL"] = withV1(s.BaseURL)
			b.env["APIARY_BASE_URL"] = root(s.BaseURL)
		}
		if s.APIKey != "" {
			b.env["ANTHROPIC_API_KEY"] = s.APIKey
			b.env["OPENAI_API_KEY"] = s.APIKey
		}
		if p.Model != "" {
			b.env["APIARY_MODEL"] = p.Model // a command agent decides what to do with it
		}
		if len(s.MCPServers) > 0 {
			if s.Home == "" {
				return errNoHomeForMCP(p.Name)
			}
			b.env["APIARY_MCP_CONFIG"] = b.file(".apiary-mcp.json", mcpJSON(s.MCPServers))
		}
		return nil
	},
}
