package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/strictyaml"
)

// directAccess is attempt.ModelAccess without a gateway: every attempt gets
// the same base URL, and a key that is either the configured one or one
// derived from the task (keyFor); usage is unknown, so the run falls back
// on the agents' own reports. The gateway replaces it with one virtual key
// per attempt and its ledger.
type directAccess struct {
	baseURL string
	key     string
	keyFor  func(attempt.TaskRef) string
}

var _ attempt.ModelAccess = directAccess{}

func (d directAccess) Grant(_ context.Context, ref attempt.TaskRef, _ envelope.Budget) (attempt.Access, error) {
	key := d.key
	if d.keyFor != nil {
		key = d.keyFor(ref)
	}
	return attempt.Access{BaseURL: d.baseURL, APIKey: key}, nil
}

func (d directAccess) Usage(context.Context, string) (attempt.Usage, error) {
	return attempt.Usage{}, nil
}

// mcpSurface is attempt.WriteSurface: it starts this binary as `apiary
// mcp` over stdio, rooted at the worktree and confined to the task's write
// scope.
type mcpSurface struct {
	exe string // path of this binary, named apiary
}

var _ attempt.WriteSurface = mcpSurface{}

// MCPServer is `apiary mcp` rooted at the worktree and confined to the
// write scope, with the attempt's capability (in the server's environment,
// never on its command line), the run's revocations and control socket,
// and the escrowed tools.
func (m mcpSurface) MCPServer(worktree string, scope []string, g attempt.Grant) (agent.MCPServer, error) {
	args := []string{"mcp", "--root", worktree}
	for _, s := range scope {
		if s == "." {
			args = args[:3] // the whole tree: no restriction
			break
		}
		args = append(args, "--write-scope", s)
	}
	srv := agent.MCPServer{Name: "apiary", Command: m.exe}
	if g.Capability != "" {
		srv.Env = map[string]string{"APIARY_CAPABILITY": g.Capability}
		if g.Revocations != "" {
			srv.Env["APIARY_REVOCATIONS"] = g.Revocations
		}
		if g.Control != "" {
			srv.Env["APIARY_CONTROL"] = g.Control
		}
		for _, t := range g.EscrowTools {
			args = append(args, "--escrow-tool", t)
		}
	}
	srv.Args = args
	return srv, nil
}

// newMCPSurface links this executable as .apiary/bin/apiary in the
// repository (the name selects the apiary command even when the binary is
// a test binary) and returns a write surface that launches it.
func newMCPSurface(root string) (attempt.WriteSurface, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if err := rundir.Init(root); err != nil {
		return nil, err
	}
	link := rundir.State(root, "bin", "apiary")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return nil, err
	}
	if cur, err := os.Readlink(link); err != nil || cur != exe {
		tmp := link + ".new"
		os.Remove(tmp)
		if err := os.Symlink(exe, tmp); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, link); err != nil {
			return nil, err
		}
	}
	return mcpSurface{exe: link}, nil
}

// loadAgents reads an agents file: a YAML (or JSON) mapping of profile name
// to profile, as under a plan's agents:.
func loadAgents(path string) (map[string]plan.Agent, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := strictyaml.ParseAuto(path, b, strictyaml.Options{MaxBytes: 1 << 20})
	if err != nil {
		return nil, err
	}
	var raw map[string]plan.Agent
	if err := doc.Decode(&raw); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := raw[n]
		if err := (agent.Profile{Name: n, Kind: a.Kind, Argv: a.Argv}).Validate(); err != nil {
			at := doc.Pos(strictyaml.Path{n})
			return nil, fmt.Errorf("%s:%d:%d: %w", path, at.Line, at.Column, err)
		}
	}
	return raw, nil
}
