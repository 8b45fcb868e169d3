package cli

import (
	"os"
	"path/filepath"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
)

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

// loadAgents reads an agents file (see plan.LoadAgents), each profile
// checked as an agent profile.
func loadAgents(path string) (map[string]plan.Agent, error) {
	return plan.LoadAgents(path, func(name string, a plan.Agent) error {
		return agent.Profile{Name: name, Kind: a.Kind, Argv: a.Argv}.Validate()
	})
}

// modelKey is the model API key agents are given: $APIARY_MODEL_KEY, else
// $ANTHROPIC_API_KEY.
func modelKey(e *env) string {
	if key := e.Getenv("APIARY_MODEL_KEY"); key != "" {
		return key
	}
	return e.Getenv("ANTHROPIC_API_KEY")
}

// modelEndpoint is where agents reach the models: the --model-url flag's
// URL, else $ANTHROPIC_BASE_URL, and modelKey.
func modelEndpoint(e *env, flagURL string) (url, key string) {
	url = flagURL
	if url == "" {
		url = e.Getenv("ANTHROPIC_BASE_URL")
	}
	return url, modelKey(e)
}
