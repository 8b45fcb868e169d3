package cli

import (
	"bytes"
	"os"
	"slices"
	"testing"

	"github.com/apiary-dev/apiary/internal/access"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/demo"
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
		srv, err := ws.MCPServer(wt, tc.scope, attempt.Grant{Capability: "tok", Control: "/ctl", EscrowTools: []string{"rw.delete"}})
		if err != nil {
			t.Fatal(err)
		}
		want := append(slices.Clone(tc.args), "--escrow-tool", "rw.delete")
		want[2] = wt
		if srv.Name != "apiary" || srv.Command != link || !slices.Equal(srv.Args, want) ||
			srv.Env["APIARY_CAPABILITY"] != "tok" || srv.Env["APIARY_CONTROL"] != "/ctl" {
			t.Errorf("scope %v: server %+v", tc.scope, srv)
		}
		if slices.Contains(srv.Args, "tok") {
			t.Errorf("the capability is on the command line: %v", srv.Args)
		}
	}
}

func TestDirectAccess(t *testing.T) {
	t.Parallel()
	d := access.Direct{BaseURL: "http://127.0.0.1:1", Key: "k"}
	a, err := d.Grant(t.Context(), attempt.TaskRef{Task: "x"}, envelope.Budget{})
	if err != nil || a.BaseURL != "http://127.0.0.1:1" || a.APIKey != "k" {
		t.Errorf("grant %+v %v", a, err)
	}
	if u, err := d.Usage(t.Context(), a.KeyID); err != nil || u.Known {
		t.Errorf("usage %+v %v: a direct connection cannot know", u, err)
	}
	if a, _ := (access.Direct{KeyFor: demo.Key}).Grant(t.Context(), attempt.TaskRef{Task: "mul", Role: attempt.RoleWorker}, envelope.Budget{}); a.APIKey != "demo-mul" {
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
