package agent

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

var codexCLI = &cli{
	facts: Facts{
		Kind: KindCodex, CLI: "Codex CLI", Package: "npm:@openai/codex", Bin: "codex", Checked: "0.171.0",
		Headless: "codex exec --json -s workspace-write -C DIR --skip-git-repo-check --ephemeral " +
			"-c model_provider=\"apiary\" [-m MODEL] PROMPT (stdin closed)",
		Home: "CODEX_HOME=$HOME/.codex, created per attempt, with config.toml: a [model_providers.apiary] " +
			"entry for the attempt's base URL and the MCP servers",
		BaseURL: "config.toml model_providers.apiary.base_url=BASE/v1 (wire_api responses, supports_websockets " +
			"false); Codex 0.171 ignores OPENAI_BASE_URL",
		Key:      "OPENAI_API_KEY (the provider's env_key) and CODEX_API_KEY",
		MCP:      true,
		MCPHow:   "config.toml [mcp_servers.NAME] command, args, env",
		ToolName: "namespace mcp__apiary, function rw_safe_write",
		Report: "thread.started thread_id; item.completed agent_message (last one is the summary); " +
			"turn.completed usage (input_tokens includes cached); turn.failed; a top-level error event is " +
			"transient (\"Reconnecting…\") unless no turn completes",
		NeedsHome: true,
	},
	build:  buildCodex,
	parser: func() lineParser { return &codexParser{} },
}

// codexProvider is the model provider id the attempt's config.toml defines.
const codexProvider = "apiary"

func buildCodex(b *builder) error {
	s, p := b.s, b.s.Profile
	home := s.Home + "/.codex"
	b.argv = []string{b.bin, "exec", "--json", "-s", "workspace-write", "-C", s.Dir, "--skip-git-repo-check", "--ephemeral"}
	var t tomlDoc
	t.comment("apiary: this attempt's Codex configuration; CODEX_HOME is private to the attempt.")
	if s.BaseURL != "" {
		// A -c override wins over any project .codex/config.toml.
		b.argv = append(b.argv, "-c", "model_provider="+tomlString(codexProvider))
		t.kv("model_provider", tomlString(codexProvider))
		t.table("model_providers." + codexProvider)
		t.kv("name", tomlString("apiary"))
		t.kv("base_url", tomlString(withV1(s.BaseURL)))
		t.kv("env_key", tomlString("OPENAI_API_KEY"))
		t.kv("wire_api", tomlString("responses"))
		// HTTP: the gateway paces, queues and retries HTTP requests; it
		// meters a WebSocket session's responses but cannot pace them.
		t.kv("supports_websockets", "false")
	}
	for _, m := range s.MCPServers {
		t.table("mcp_servers." + m.Name)
		t.kv("command", tomlString(m.Command))
		t.kv("args", tomlArray(m.Args))
		if len(m.Env) > 0 {
			t.table("mcp_servers." + m.Name + ".env")
			keys := make([]string, 0, len(m.Env))
			for k := range m.Env {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				t.kv(tomlString(k), tomlString(m.Env[k]))
			}
		}
	}
	b.file(".codex/config.toml", []byte(t.String()))
	if p.Model != "" {
		b.argv = append(b.argv, "-m", p.Model)
	}
	b.argv = append(b.argv, s.Prompt)
	b.set("CODEX_HOME", home)
	if s.APIKey != "" {
		b.set("OPENAI_API_KEY", s.APIKey)
		b.set("CODEX_API_KEY", s.APIKey)
	}
	return nil
}

// tomlDoc writes the little TOML a config.toml needs.
type tomlDoc struct{ b strings.Builder }

func (t *tomlDoc) comment(s string)  { fmt.Fprintf(&t.b, "# %s\n", s) }
func (t *tomlDoc) table(name string) { fmt.Fprintf(&t.b, "\n[%s]\n", name) }
func (t *tomlDoc) kv(k, v string)    { fmt.Fprintf(&t.b, "%s = %s\n", k, v) }
func (t *tomlDoc) String() string    { return t.b.String() }

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func tomlArray(a []string) string {
	q := make([]string, len(a))
	for i, s := range a {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// codexParser reads codex exec --json events.
type codexParser struct {
	seen      bool
	session   string
	text      string
	turns     int
	completed bool
	failed    bool
	in, out   int64
}

func (p *codexParser) line(b []byte) {
	var ev struct {
		Type     string `json:"type"`
		ThreadID string `json:"thread_id"`
		Session  string `json:"session_id"` // before Codex 0.4x
		Usage    *struct {
			Input  int64 `json:"input_tokens"`
			Output int64 `json:"output_tokens"`
		} `json:"usage"`
		Item *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"item"`
	}
	if json.Unmarshal(b, &ev) != nil || ev.Type == "" {
		return
	}
	p.seen = true
	switch ev.Type {
	case "thread.started":
		p.session = ev.ThreadID
		if p.session == "" {
			p.session = ev.Session
		}
	case "turn.completed":
		p.turns++
		p.completed = true
		if ev.Usage != nil {
			p.in += ev.Usage.Input
			p.out += ev.Usage.Output
		}
	case "turn.failed":
		p.turns++
		p.failed = true
	case "item.completed":
		if ev.Item != nil && ev.Item.Type == "agent_message" {
			p.text = ev.Item.Text
		}
	}
	// A top-level "error" event is a transport notice ("Reconnecting...
	// 2/5"); the run failed only if no turn completes after it, or a turn
	// failed. Items of type "error" are warnings.
}

func (p *codexParser) report() *Report {
	if !p.seen {
		return nil
	}
	r := &Report{Kind: KindCodex, SessionID: p.session, Text: bound(p.text), Turns: p.turns,
		InputTokens: p.in, OutputTokens: p.out, Subtype: "success"}
	if p.failed || !p.completed {
		r.Subtype, r.IsError = "failed", true
	}
	return r
}
