package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// TestMCPSurface: the MCP config starts this binary, named apiary, as
// `apiary mcp` rooted at the worktree and confined to the write scope.
func TestMCPSurface(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ws, err := newMCPSurface(root)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	link := rundir.State(root, "bin", "apiary")
	if got, err := os.Readlink(link); err != nil || got != exe {
		t.Errorf("link %s -> %q, %v", link, got, err)
	}
	for _, tc := range []struct {
		scope, args []string
	}{
		{[]string{"src/", "docs/a.md"}, []string{"mcp", "--root", "WT", "--write-scope", "src/", "--write-scope", "docs/a.md"}},
		{[]string{"."}, []string{"mcp", "--root", "WT"}},
	} {
		wt := t.TempDir()
		path, tools, err := ws.MCPConfig(wt, tc.scope)
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			MCPServers map[string]struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"mcpServers"`
		}
		b, _ := os.ReadFile(path)
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(tc.args)
		want[2] = wt
		if s := cfg.MCPServers["apiary"]; s.Command != link || !slices.Equal(s.Args, want) || !slices.Equal(tools, []string{"mcp__apiary"}) {
			t.Errorf("scope %v: config %s, tools %v", tc.scope, b, tools)
		}
	}
}

func TestDirectAccess(t *testing.T) {
	t.Parallel()
	d := directAccess{baseURL: "http://127.0.0.1:1", key: "k"}
	a, err := d.Grant(t.Context(), attempt.TaskRef{Task: "x"}, envelope.Budget{})
	if err != nil || a.BaseURL != "http://127.0.0.1:1" || a.APIKey != "k" {
		t.Errorf("grant %+v %v", a, err)
	}
	if u, err := d.Usage(t.Context(), a.KeyID); err != nil || u.Known {
		t.Errorf("usage %+v %v: a direct connection cannot know", u, err)
	}
	if a, _ := (directAccess{keyFor: demoKey}).Grant(t.Context(), attempt.TaskRef{Task: "mul", Role: attempt.RoleWorker}, envelope.Budget{}); a.APIKey != "demo-mul" {
		t.Errorf("demo key %q", a.APIKey)
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is not a terminal")
	}
	f, _ := os.CreateTemp(t.TempDir(), "x")
	defer f.Close()
	if isTerminal(f) {
		t.Error("a file is not a terminal")
	}
}
