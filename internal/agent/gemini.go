package agent

import (
	"encoding/json"
	"strings"
)

var geminiCLI = &cli{
	facts: Facts{
		Kind: KindGemini, CLI: "Gemini CLI", Package: "npm:@google/gemini-cli", Bin: "gemini", Checked: "0.61.0",
		Headless: "gemini -p PROMPT --output-format stream-json --approval-mode yolo --skip-trust [-m MODEL]",
		Home: "$HOME/.gemini/settings.json per attempt: security.auth.selectedType \"gemini-api-key\" (without it " +
			"GOOGLE_GEMINI_BASE_URL selects an auth type Gemini rejects, exit 41), mcpServers",
		BaseURL:  "GOOGLE_GEMINI_BASE_URL=BASE (Gemini adds /v1beta/models/…)",
		Key:      "GEMINI_API_KEY (sent as x-goog-api-key)",
		MCP:      true,
		MCPHow:   "settings.json mcpServers.NAME {command, args, env, trust: true}",
		ToolName: "mcp_apiary_rw.safe_write (the dot is kept)",
		Report: "init session_id; assistant message deltas after the last tool call (the summary); " +
			"result status, error, and stats.input_tokens / stats.output_tokens once (the per-model " +
			"stats repeat them)",
		NeedsHome: true,
	},
	build:  buildGemini,
	parser: func() lineParser { return &geminiParser{} },
}

func buildGemini(b *builder) error {
	s, p := b.s, b.s.Profile
	// --skip-trust: a fresh worktree is untrusted, and headless Gemini CLI
	// then exits 55 before any model call.
	b.argv = []string{b.bin, "-p", s.Prompt, "--output-format", "stream-json", "--approval-mode", "yolo", "--skip-trust"}
	if p.Model != "" {
		b.argv = append(b.argv, "-m", p.Model)
	}
	settings := map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
	}
	if len(s.MCPServers) > 0 {
		servers := map[string]any{}
		for _, m := range s.MCPServers {
			srv := map[string]any{"command": m.Command, "args": nonNil(m.Args), "trust": true}
			if len(m.Env) > 0 {
				srv["env"] = m.Env
			}
			servers[m.Name] = srv
		}
		settings["mcpServers"] = servers
	}
	data, _ := json.MarshalIndent(settings, "", "  ")
	b.file(".gemini/settings.json", data)
	// It would re-exec itself with more memory, out of our supervision.
	b.env["GEMINI_CLI_NO_RELAUNCH"] = "true"
	if s.BaseURL != "" {
		b.set("GOOGLE_GEMINI_BASE_URL", root(s.BaseURL))
	}
	if s.APIKey != "" {
		b.set("GEMINI_API_KEY", s.APIKey)
	}
	return nil
}

// geminiParser reads Gemini CLI's stream-json events.
type geminiParser struct {
	session string
	text    strings.Builder
	rep     *Report
}

func (p *geminiParser) line(b []byte) {
	var ev struct {
		Type    string          `json:"type"`
		Session string          `json:"session_id"`
		Role    string          `json:"role"`
		Content string          `json:"content"`
		Delta   bool            `json:"delta"`
		Status  string          `json:"status"`
		Error   json.RawMessage `json:"error"`
		Stats   json.RawMessage `json:"stats"`
	}
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	switch ev.Type {
	case "init":
		p.session = ev.Session
	case "message":
		if ev.Role != "assistant" {
			return
		}
		if !ev.Delta {
			p.text.Reset()
		}
		if p.text.Len() < maxText+4 {
			p.text.WriteString(ev.Content)
		}
	case "tool_use", "tool_result":
		// The summary is what the model says after its last tool call.
		p.text.Reset()
	case "result":
		r := &Report{Kind: KindGemini, SessionID: p.session, Text: bound(p.text.String()), Subtype: "success"}
		failed := ev.Status != "" && ev.Status != "success"
		if failed || (len(ev.Error) > 0 && string(ev.Error) != "null") {
			r.Subtype, r.IsError = "failed", true
		}
		r.InputTokens, r.OutputTokens = geminiTokens(ev.Stats)
		p.rep = r
	}
}

func (p *geminiParser) report() *Report { return p.rep }

// geminiTokens reads the token counts of a result's stats once: the
// top-level input_tokens and output_tokens (input_tokens includes the
// cached ones, "input" is the same count again), else the sum over
// stats.models.
func geminiTokens(raw json.RawMessage) (in, out int64) {
	type counts struct {
		Input  *int64 `json:"input_tokens"`
		Output *int64 `json:"output_tokens"`
	}
	var st struct {
		counts
		Models map[string]counts `json:"models"`
	}
	if json.Unmarshal(raw, &st) != nil {
		return 0, 0
	}
	if st.Input != nil || st.Output != nil {
		return deref(st.Input), deref(st.Output)
	}
	for _, m := range st.Models {
		in += deref(m.Input)
		out += deref(m.Output)
	}
	return in, out
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
