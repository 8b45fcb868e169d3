package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"

	"github.com/apiary-dev/apiary/internal/durable"
	"github.com/apiary-dev/apiary/internal/mcpserver"
)

func mcpCommand() *command {
	return &command{
		Name:    "mcp",
		Summary: "serve the durable write surface (rw.* tools) over MCP",
		Help: `apiary mcp serves the agents' write surface as an MCP server: the Resilient
Write tools (rw.safe_write, rw.chunk_*, rw.scratch_*, rw.handoff_*,
rw.checkpoint*, rw.risk_score, rw.validate, rw.journal_tail, rw.analytics)
with the same names, arguments and error envelope, plus rw.read, rw.edit,
rw.list, rw.move, rw.mkdir, rw.stat and rw.search. Writes are atomic,
fsynced and journaled; every path is confined to the roots, and no tool
reads a file through a symlink or a second hard link.

Any number of apiary mcp processes (one per agent session, stdio or
--listen) may serve one workspace at once: guarded writes, appends, chunk
sessions, scratch, checkpoints and the journal are serialized across them by
flock on lock files in the state directory, which die with their holder. A
write whose writer died before its journal row is journaled, marked
recovered, by the next server to touch it.

It speaks MCP on stdin/stdout (exiting when stdin closes; a malformed line
is answered with a JSON-RPC error and the session goes on), or streamable
HTTP at http://ADDR/mcp with --listen.

With a capability (--capability, else $APIARY_CAPABILITY) every tool call
and every path written is verified against the token — its signature with
the root key (--key-file, default .apiary/cap.key of the repository), the
revocations the run publishes (--revocations, else $APIARY_REVOCATIONS),
its tools, path prefixes and expiry — and refused with a typed envelope
otherwise; --escrow-tool names tools that need a human's approval, asked
through the run. With the run's control socket (--control, else
$APIARY_CONTROL) the server also offers apiary.spawn, which asks the run
for a child task.

The first --root is the workspace (default $RW_WORKSPACE, else the current
directory); further roots are addressed as @NAME/path, NAME being the root's
base name. The server's own state (journal, chunks, scratch, checkpoints,
policy.yaml) lives in the workspace's state directory, which the tools
refuse to touch as a user path. Environment: RW_WORKSPACE, RW_POLICY_FILE
(policy override, absolute or workspace-relative), RW_SCRATCH_DISABLE_GET
(any value: rw.scratch_get is refused).`,
		Examples: []string{
			"apiary mcp --root .",
			"apiary mcp --root . --listen 127.0.0.1:7430",
			"apiary mcp --root ws --write-scope src/ --escrow-tool rw.move",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			var roots, scopes stringList
			fs.Var(&roots, "root", "`DIR` the tools may touch (repeatable; the first is the workspace, the others are @NAME/…)")
			fs.Var(&scopes, "write-scope", "path `PREFIX` the tools may write under (repeatable; default everywhere)")
			listen := fs.String("listen", "", "serve streamable HTTP at http://`ADDR`/mcp instead of stdio (a bare :PORT binds 127.0.0.1)")
			stateDir := fs.String("state-dir", "", "workspace-relative state `DIR` (default "+durable.DefaultStateDir+")")
			compat := fs.Bool("rw-compat", false, "Resilient Write layout: state in "+durable.CompatStateDir+", server and journal caller named resilient-write")
			var cf capFlags
			fs.StringVar(&cf.token, "capability", "", "capability `TOKEN` checked on every tool call (default $APIARY_CAPABILITY)")
			fs.StringVar(&cf.keyFile, "key-file", "", "root key `FILE` of the capability (default .apiary/cap.key of the repository)")
			fs.StringVar(&cf.revocations, "revocations", "", "the run's revocation `FILE` (default $APIARY_REVOCATIONS)")
			fs.StringVar(&cf.control, "control", "", "the run's control `SOCKET`: adds apiary.spawn (default $APIARY_CONTROL)")
			fs.Var(&cf.escrowTools, "escrow-tool", "`TOOL` that needs a human's approval (repeatable)")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				return runMCP(ctx, e, mcpFlags{roots: roots, scopes: scopes, listen: *listen, stateDir: *stateDir, compat: *compat, caps: cf})
			}
		},
	}
}

type mcpFlags struct {
	roots, scopes []string
	listen        string
	stateDir      string
	compat        bool
	caps          capFlags
}

func runMCP(ctx context.Context, e *env, f mcpFlags) error {
	if f.listen != "" {
		if err := checkListen("--listen", f.listen); err != nil {
			return err
		}
	}
	log := slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	roots := f.roots
	if len(roots) == 0 {
		if ws := e.Getenv("RW_WORKSPACE"); ws != "" {
			roots = []string{ws}
		} else {
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			roots = []string{wd}
		}
	}
	cfg := durable.Config{
		Roots:              roots,
		StateDir:           f.stateDir,
		PolicyFile:         e.Getenv("RW_POLICY_FILE"),
		ScratchGetDisabled: e.Getenv("RW_SCRATCH_DISABLE_GET") != "",
		Logger:             log,
	}
	name := ""
	if f.compat {
		name = durable.CompatCaller
		cfg.Caller = durable.CompatCaller
		if cfg.StateDir == "" {
			cfg.StateDir = durable.CompatStateDir
		}
	}
	if len(f.scopes) > 0 {
		cfg.Authority = durable.WriteScope(f.scopes)
	}
	spawner, err := f.caps.wire(ctx, e, roots[0], &cfg)
	if err != nil {
		return err
	}
	if py, err := exec.LookPath("python3"); err == nil {
		cfg.Python = durable.Python3{Path: py}
	}
	ws, err := durable.Open(ctx, cfg)
	if err != nil {
		if errors.Is(err, durable.ErrBadStateDir) {
			return usagef("%v", err)
		}
		return err
	}
	defer ws.Close()
	// The SDK narrates every session at Info; keep stderr for what matters.
	sdkLog := slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := mcpserver.New(ws, mcpserver.Options{Name: name, Version: readBuildVersion().Version, Logger: sdkLog, Spawner: spawner})
	if f.listen == "" {
		return mcpserver.ServeStdio(ctx, srv, e.Stdin, e.Stdout)
	}
	addr := f.listen
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stderr, "apiary mcp: serving http://%s/mcp (workspace %s)\n", ln.Addr(), ws.Dir())
	return mcpserver.ServeHTTP(ctx, ln, mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{Logger: sdkLog}))
}
