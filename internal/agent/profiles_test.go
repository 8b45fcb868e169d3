package agent

import (
	"slices"
	"strings"
	"testing"
)

// TestBuiltinCommands: every built-in profile runs its CLI headless in the
// worktree, with the prompt, the gateway as its base URL and the task's key,
// and never the parent's environment beyond the allowlist.
func TestBuiltinCommands(t *testing.T) {
	t.Parallel()
	spec := Spec{Dir: "/wt", Prompt: "do it", Home: "/h", BaseURL: "http://127.0.0.1:7420", APIKey: "task-key",
		TaskID: "t", RunID: "r", MCPConfig: "/m.json", MaxBudgetUSD: 1.5}
	for _, tc := range []struct {
		kind     string
		argv     []string // must appear in order
		env      []string
		notInEnv []string
	}{
		{KindClaude, []string{"claude", "-p", "do it", "--output-format", "stream-json", "--permission-mode", "acceptEdits", "--max-budget-usd", "1.5", "--mcp-config", "/m.json", "--strict-mcp-config"},
			[]string{"ANTHROPIC_BASE_URL=http://127.0.0.1:7420", "ANTHROPIC_API_KEY=task-key", "HOME=/h", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}, []string{"OPENAI_API_KEY"}},
		{KindCodex, []string{"codex", "exec", "--json", "-s", "workspace-write", "-C", "/wt", "do it"},
			[]string{"OPENAI_BASE_URL=http://127.0.0.1:7420/v1", "OPENAI_API_KEY=task-key", "CODEX_HOME=/h/.codex"}, []string{"ANTHROPIC_API_KEY"}},
		{KindGemini, []string{"gemini", "-p", "do it", "--output-format", "stream-json"},
			[]string{"GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:7420", "GEMINI_API_KEY=task-key"}, []string{"OPENAI_API_KEY"}},
		{KindAider, []string{"aider", "--message", "do it", "--yes-always", "--no-auto-commits", "--openai-api-base", "http://127.0.0.1:7420/v1"},
			[]string{"OPENAI_API_KEY=task-key"}, []string{"ANTHROPIC_API_KEY"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			p, ok := Builtin(tc.kind)
			if !ok {
				t.Fatalf("no built-in profile %q", tc.kind)
			}
			s := spec
			s.Profile = p
			argv, env, err := s.Command("/usr/bin")
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			for _, a := range argv {
				if i < len(tc.argv) && a == tc.argv[i] {
					i++
				}
			}
			if i != len(tc.argv) {
				t.Errorf("argv %q lacks, in order, %q (stopped at %q)", argv, tc.argv, tc.argv[i])
			}
			for _, kv := range append(tc.env, "APIARY_TASK_ID=t", "APIARY_RUN_ID=r", "PATH=/usr/bin") {
				if !slices.Contains(env, kv) {
					t.Errorf("env lacks %s", kv)
				}
			}
			for _, k := range tc.notInEnv {
				for _, kv := range env {
					if strings.HasPrefix(kv, k+"=") {
						t.Errorf("env has %s", kv)
					}
				}
			}
		})
	}
}
