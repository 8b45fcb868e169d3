package agent

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var testServer = MCPServer{Name: "apiary", Command: "/opt/apiary", Args: []string{"mcp", "--root", "/wt"},
	Env: map[string]string{"APIARY_CAPABILITY": "cap-secret"}}

// TestBuiltinCommands: every built-in profile runs its CLI headless in the
// worktree, with the prompt, the attempt's base URL in the form the CLI
// reads, the task's key, its configuration under the private home, and
// never the parent's environment beyond the allowlist.
func TestBuiltinCommands(t *testing.T) {
	t.Parallel()
	spec := Spec{Dir: "/wt", Prompt: "do it", Home: "/h", BaseURL: "http://127.0.0.1:7420", APIKey: "task-key",
		TaskID: "t", RunID: "r", MCPConfig: "/m.json", MaxBudgetUSD: 1.5}
	for _, tc := range []struct {
		kind     string
		argv     []string // must appear in order
		env      []string
		notInEnv []string
		files    map[string][]string // path → substrings
	}{
		{KindClaude, []string{"claude", "-p", "do it", "--output-format", "stream-json", "--permission-mode", "acceptEdits", "--max-budget-usd", "1.5", "--mcp-config", "/m.json", "--strict-mcp-config"},
			[]string{"ANTHROPIC_BASE_URL=http://127.0.0.1:7420", "ANTHROPIC_API_KEY=task-key", "HOME=/h", "CLAUDE_CONFIG_DIR=/h/.claude", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"},
			[]string{"OPENAI_API_KEY"}, nil},
		{KindCodex, []string{"codex", "exec", "--json", "-s", "workspace-write", "-C", "/wt", "--skip-git-repo-check", "--ephemeral", "-c", `model_provider="apiary"`, "do it"},
			[]string{"OPENAI_API_KEY=task-key", "CODEX_API_KEY=task-key", "CODEX_HOME=/h/.codex"},
			[]string{"ANTHROPIC_API_KEY", "OPENAI_BASE_URL"},
			map[string][]string{"/h/.codex/config.toml": {`model_provider = "apiary"`, "[model_providers.apiary]",
				`base_url = "http://127.0.0.1:7420/v1"`, `env_key = "OPENAI_API_KEY"`, `wire_api = "responses"`, "supports_websockets = false"}}},
		{KindGemini, []string{"gemini", "-p", "do it", "--output-format", "stream-json", "--approval-mode", "yolo", "--skip-trust"},
			[]string{"GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:7420", "GEMINI_API_KEY=task-key", "GEMINI_CLI_NO_RELAUNCH=true"},
			[]string{"OPENAI_API_KEY"},
			map[string][]string{"/h/.gemini/settings.json": {`"selectedType": "gemini-api-key"`}}},
		{KindOpenCode, []string{"opencode", "run", "--format", "json", "--auto", "--title", "t", "-m", "anthropic/claude-sonnet-4-5", "do it"},
			[]string{"ANTHROPIC_API_KEY=task-key", "OPENCODE_DISABLE_MODELS_FETCH=true",
				`OPENCODE_CONFIG_CONTENT={"$schema":"https://opencode.ai/config.json","autoupdate":false,"model":"anthropic/claude-sonnet-4-5",` +
					`"permission":{"bash":"allow","edit":"allow","webfetch":"deny"},"provider":{"anthropic":{"models":{"claude-sonnet-4-5":{"name":"claude-sonnet-4-5"}},` +
					`"options":{"apiKey":"{env:ANTHROPIC_API_KEY}","baseURL":"http://127.0.0.1:7420/v1"}}},"share":"disabled","small_model":"anthropic/claude-sonnet-4-5"}`},
			[]string{"OPENAI_API_KEY", "ANTHROPIC_BASE_URL"}, nil},
		{KindAider, []string{"aider", "--message", "do it", "--yes-always", "--no-auto-commits", "--openai-api-base", "http://127.0.0.1:7420/v1"},
			[]string{"OPENAI_API_KEY=task-key"}, []string{"ANTHROPIC_API_KEY"}, nil},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			p, ok := Builtin(tc.kind)
			if !ok {
				t.Fatalf("no built-in profile %q", tc.kind)
			}
			s := spec
			s.Profile = p
			inv, err := s.Invocation("/usr/bin")
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			for _, a := range inv.Argv {
				if i < len(tc.argv) && a == tc.argv[i] {
					i++
				}
			}
			if i != len(tc.argv) {
				t.Errorf("argv %q lacks, in order, %q (stopped at %q)", inv.Argv, tc.argv, tc.argv[i])
			}
			for _, kv := range append(tc.env, "APIARY_TASK_ID=t", "APIARY_RUN_ID=r", "PATH=/usr/bin") {
				if !slices.Contains(inv.Env, kv) {
					t.Errorf("env lacks %s", kv)
				}
			}
			for _, k := range tc.notInEnv {
				for _, kv := range inv.Env {
					if strings.HasPrefix(kv, k+"=") {
						t.Errorf("env has %s", kv)
					}
				}
			}
			for path, subs := range tc.files {
				f := fileOf(inv, path)
				if f == nil {
					t.Fatalf("no file %s in %v", path, inv.Files)
				}
				for _, sub := range subs {
					if !strings.Contains(string(f.Data), sub) {
						t.Errorf("%s lacks %q:\n%s", path, sub, f.Data)
					}
				}
			}
		})
	}
}

func fileOf(inv Invocation, path string) *File {
	for i := range inv.Files {
		if inv.Files[i].Path == path {
			return &inv.Files[i]
		}
	}
	return nil
}

// TestMCPServersRendered: the neutral MCP server reaches each CLI in its own
// format, with its environment (the capability) in a file, not on the
// command line, and its tools pre-approved.
func TestMCPServersRendered(t *testing.T) {
	t.Parallel()
	base := Spec{Dir: "/wt", Prompt: "p", Home: "/h", BaseURL: "http://127.0.0.1:1", APIKey: "k", MCPServers: []MCPServer{testServer}}
	for _, tc := range []struct {
		kind string
		file string // "" = the config is in OPENCODE_CONFIG_CONTENT
		want any    // decoded JSON to find, or TOML lines
	}{
		{KindClaude, "/h/.apiary-mcp.json", map[string]any{"mcpServers": map[string]any{"apiary": map[string]any{
			"type": "stdio", "command": "/opt/apiary", "args": []any{"mcp", "--root", "/wt"}, "env": map[string]any{"APIARY_CAPABILITY": "cap-secret"}}}}},
		{KindCodex, "/h/.codex/config.toml", []string{"[mcp_servers.apiary]", `command = "/opt/apiary"`, `args = ["mcp", "--root", "/wt"]`,
			"[mcp_servers.apiary.env]", `"APIARY_CAPABILITY" = "cap-secret"`}},
		{KindGemini, "/h/.gemini/settings.json", map[string]any{"apiary": map[string]any{
			"command": "/opt/apiary", "args": []any{"mcp", "--root", "/wt"}, "env": map[string]any{"APIARY_CAPABILITY": "cap-secret"}, "trust": true}}},
		{KindOpenCode, "", map[string]any{"apiary": map[string]any{"type": "local", "enabled": true,
			"command": []any{"/opt/apiary", "mcp", "--root", "/wt"}, "environment": map[string]any{"APIARY_CAPABILITY": "cap-secret"}}}},
		{KindCommand, "/h/.apiary-mcp.json", nil},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			s := base
			s.Profile = Profile{Name: tc.kind, Kind: tc.kind, Argv: []string{"true"}}
			inv, err := s.Invocation("/bin")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(strings.Join(inv.Argv, " "), "cap-secret") {
				t.Errorf("the capability is on the command line: %q", inv.Argv)
			}
			var data []byte
			if tc.file == "" {
				for _, kv := range inv.Env {
					if v, ok := strings.CutPrefix(kv, "OPENCODE_CONFIG_CONTENT="); ok {
						data = []byte(v)
					}
				}
			} else if f := fileOf(inv, tc.file); f != nil {
				data = f.Data
			} else {
				t.Fatalf("no file %s", tc.file)
			}
			switch w := tc.want.(type) {
			case []string:
				for _, l := range w {
					if !strings.Contains(string(data), l+"\n") {
						t.Errorf("config lacks line %q:\n%s", l, data)
					}
				}
			case map[string]any:
				var got map[string]any
				if err := json.Unmarshal(data, &got); err != nil {
					t.Fatal(err)
				}
				if tc.kind == KindGemini {
					got, _ = got["mcpServers"].(map[string]any)
				}
				if tc.kind == KindOpenCode {
					got, _ = got["mcp"].(map[string]any)
				}
				if !jsonEqual(got, w) {
					t.Errorf("MCP config %s\nwant %s", mustJSON(got), mustJSON(w))
				}
			}
			switch tc.kind {
			case KindClaude:
				if !slices.Contains(inv.Argv, "--strict-mcp-config") || !strings.Contains(strings.Join(inv.Argv, " "), "mcp__apiary") {
					t.Errorf("argv %q: want the config, strict, and mcp__apiary pre-approved", inv.Argv)
				}
			case KindCommand:
				if !slices.Contains(inv.Env, "APIARY_MCP_CONFIG=/h/.apiary-mcp.json") {
					t.Errorf("env %q lacks APIARY_MCP_CONFIG", inv.Env)
				}
			}
		})
	}
}

func jsonEqual(a, b any) bool { return mustJSON(a) == mustJSON(b) }

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestInvocationRefusals: what cannot work is refused with a typed error
// before anything starts.
func TestInvocationRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		s    Spec
		want error
	}{
		{"aider with MCP", Spec{Profile: Profile{Name: "a", Kind: KindAider}, Home: "/h", MCPServers: []MCPServer{testServer}}, ErrUnsupported},
		{"codex without home", Spec{Profile: Profile{Name: "c", Kind: KindCodex}}, ErrBadProfile},
		{"relative home", Spec{Profile: Profile{Name: "c", Kind: KindGemini}, Home: "h"}, ErrBadProfile},
		{"bad server name", Spec{Profile: Profile{Name: "c", Kind: KindClaude}, Home: "/h", MCPServers: []MCPServer{{Name: "a b", Command: "x"}}}, ErrBadProfile},
		{"server without command", Spec{Profile: Profile{Name: "c", Kind: KindClaude}, Home: "/h", MCPServers: []MCPServer{{Name: "a"}}}, ErrBadProfile},
		{"opencode other provider", Spec{Profile: Profile{Name: "o", Kind: KindOpenCode, Model: "google/gemini-2.5-pro"}, Home: "/h"}, ErrUnsupported},
		{"command MCP without home", Spec{Profile: Profile{Name: "x", Kind: KindCommand, Argv: []string{"true"}}, MCPServers: []MCPServer{testServer}}, ErrBadProfile},
		{"unknown kind", Spec{Profile: Profile{Name: "x", Kind: "cursor"}, Home: "/h"}, ErrBadProfile},
	} {
		if _, err := tc.s.Invocation("/bin"); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestOwnedEnv: a profile's env cannot send a built-in CLI around the
// attempt's gateway or out of its private home; a command agent's env may
// name the base URL in its own form.
func TestOwnedEnv(t *testing.T) {
	t.Parallel()
	s := Spec{Profile: Profile{Name: "c", Kind: KindCodex, Env: map[string]string{"CODEX_HOME": "/shared/.codex", "OPENAI_API_KEY": "sk-real", "EXTRA": "1"}},
		Dir: "/wt", Home: "/h", BaseURL: "http://127.0.0.1:9", APIKey: "vk"}
	_, env, err := s.Command("/bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"CODEX_HOME=/h/.codex", "OPENAI_API_KEY=vk", "EXTRA=1"} {
		if !slices.Contains(env, kv) {
			t.Errorf("env lacks %s: %q", kv, env)
		}
	}
	cmd := Spec{Profile: Profile{Name: "oc", Kind: KindCommand, Argv: []string{"opencode", "run"},
		Env: map[string]string{"ANTHROPIC_BASE_URL": "{{base_url}}/v1", "MY_KEY": "{{api_key}}"}},
		Home: "/h", BaseURL: "http://127.0.0.1:9", APIKey: "vk"}
	_, env, err = cmd.Command("/bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:9/v1", "MY_KEY=vk", "OPENAI_BASE_URL=http://127.0.0.1:9/v1", "APIARY_BASE_URL=http://127.0.0.1:9"} {
		if !slices.Contains(env, kv) {
			t.Errorf("command env lacks %s: %q", kv, env)
		}
	}
}

func TestTOMLString(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`plain`:             `"plain"`,
		`a "quoted" \ path`: `"a \"quoted\" \\ path"`,
		"line\nnext\ttab\r": `"line\nnext\ttab\r"`,
		"bell\x07del\x7f":   `"bell\u0007del\u007F"`,
		"ünïcode ✓":         `"ünïcode ✓"`,
	} {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestBaseURLForms: a base URL given with or without /v1 or a trailing
// slash reaches each CLI in its own form.
func TestBaseURLForms(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"http://127.0.0.1:5", "http://127.0.0.1:5/", "http://127.0.0.1:5/v1", "http://127.0.0.1:5/v1/"} {
		if r, v := root(in), withV1(in); r != "http://127.0.0.1:5" || v != "http://127.0.0.1:5/v1" {
			t.Errorf("%s: root %s, withV1 %s", in, r, v)
		}
	}
}

// TestFactsTable: every kind has facts; the built-in CLIs that ran here name
// the version; docs/agents.md shows the same versions.
func TestFactsTable(t *testing.T) {
	t.Parallel()
	doc := readDoc(t)
	for _, f := range Table() {
		if f.Kind == "" || f.Headless == "" || f.BaseURL == "" || f.Report == "" {
			t.Errorf("incomplete facts %+v", f)
		}
		switch f.Kind {
		case KindCommand:
			continue
		case KindAider:
			if f.Checked != "" {
				t.Errorf("aider cannot be installed here, yet facts say checked %s", f.Checked)
			}
			if !strings.Contains(doc, "| aider | untested") {
				t.Error("docs/agents.md does not say aider is untested")
			}
			continue
		}
		if f.Checked == "" {
			t.Errorf("%s: no checked version", f.Kind)
		}
		if row := "| " + f.CLI + " | " + f.Checked + " |"; !strings.Contains(doc, row) {
			t.Errorf("docs/agents.md lacks the row %q", row)
		}
	}
}

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
