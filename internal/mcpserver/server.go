package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/apiary-dev/apiary/internal/durable"
)

// Options configure New. The zero value is usable.
type Options struct {
	// Name is serverInfo.name. Default "apiary-durable".
	Name string
	// Version is serverInfo.version. Default "dev".
	Version string
	// Logger receives SDK and server logs (stderr on stdio). Default:
	// discard.
	Logger *slog.Logger
	// Spawner, if set, adds apiary.spawn (tools_spawn.go).
	Spawner Spawner
}

// instructions tell the client how to use the tools (sent at initialize
// and in server/discover).
const instructions = "This server is the workspace's durable write surface (compatible with resilient-write). " +
	"Prefer rw.safe_write over raw Write/edit tools for creating and overwriting files: writes are atomic " +
	"(temp file, fsync, rename, directory fsync), journaled, confined to the workspace, and every failure " +
	"is a typed envelope (ok:false, error, reason_hint, suggested_action, retry_budget, context) to branch on " +
	"instead of retrying blindly. Use rw.read and pass its sha256 as expected_prev_sha256 (rw.safe_write, rw.edit, " +
	"rw.move) so a concurrent change is never overwritten. For files larger than about 5 KB, build them with " +
	"rw.chunk_append and assemble with rw.chunk_compose. Before writing content that may contain credentials, " +
	"call rw.risk_score and redact what it flags. Save large intermediate results with rw.checkpoint, and at the " +
	"end of a session or when blocked write rw.handoff_write for the next agent."

// tool is one MCP tool bound to durable.
type tool struct {
	name        string
	title       string
	desc        string
	params      []param
	out         map[string]any // success fields for the output schema
	readOnly    bool
	destructive bool
	idempotent  bool
	call        func(ctx context.Context, a args, progress durable.ProgressFunc) (durable.Result, error)
}

// tools lists every tool, in families.
func tools(ws *durable.Workspace) []tool {
	var ts []tool
	ts = append(ts, writeTools(ws)...)
	ts = append(ts, chunkTools(ws)...)
	ts = append(ts, scratchTools(ws)...)
	ts = append(ts, handoffTools(ws)...)
	ts = append(ts, checkpointTools(ws)...)
	ts = append(ts, inspectTools(ws)...)
	ts = append(ts, fileTools(ws)...)
	return ts
}

// ToolNames returns the names of all tools New registers, sorted as
// tools/list returns them.
func ToolNames() []string {
	var names []string
	for _, t := range tools(nil) {
		names = append(names, t.name)
	}
	sort.Strings(names)
	return names
}

// New returns an MCP server exposing ws: the 20 Resilient Write tools with
// their names, parameters and result fields, plus rw.read, rw.edit, rw.list,
// rw.move, rw.mkdir, rw.stat and rw.search. Every result is compact JSON in
// content[0] and the same object in structuredContent; isError is set on
// every envelope. The server speaks every protocol version the SDK does
// (2026-07-28 stateless and the 2025-11-25 handshake included).
func New(ws *durable.Workspace, opts Options) *mcp.Server {
	if opts.Name == "" {
		opts.Name = "apiary-durable"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Title: "apiary durable write surface", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       opts.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		SetCacheable: func(ctx context.Context, req mcp.Request, c *mcp.Cacheable) {
			c.TTLMs = 3_600_000 // the tool list never changes while the server runs
			c.CacheScope = "public"
		},
	})
	known := map[string]bool{}
	for _, t := range append(tools(ws), spawnTools(opts.Spawner)...) {
		known[t.name] = true
		f, t := false, t
		ann := &mcp.ToolAnnotations{Title: t.title, ReadOnlyHint: t.readOnly, IdempotentHint: t.idempotent, OpenWorldHint: &f}
		if !t.readOnly {
			d := t.destructive
			ann.DestructiveHint = &d
		}
		srv.AddTool(&mcp.Tool{
			Name: t.name, Title: t.title, Description: t.desc, Annotations: ann,
			InputSchema: inputSchema(t.params), OutputSchema: outputSchema(t.out),
		}, handler(t))
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ctr, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && !known[ctr.Params.Name] {
				e := &durable.Error{Kind: durable.KindPolicyViolation, Reason: durable.ReasonUnknown, Action: durable.ActionAbort,
					Context: map[string]any{"unknown_tool": ctr.Params.Name}}
				return envelopeResult(ctr.Params.Name, e), nil
			}
			return next(ctx, method, req)
		}
	})
	return srv
}

// handler adapts a tool to the SDK: it validates the arguments itself (the
// SDK's low-level AddTool does not), reports progress when the request
// carries a progress token, and turns every failure into an envelope.
func handler(t tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a args
		var perr *durable.Error
		if m, cctx, end, ok := takeCall(ctx, req.Params.Meta); ok {
			ctx = cctx
			defer end()
			a, perr = checkArgs(t.params, m)
		} else {
			a, perr = parseArgs(t.params, req.Params.Arguments)
		}
		if perr != nil {
			return envelopeResult(t.name, perr), nil
		}
		res, err := t.call(ctx, a, progressFunc(ctx, req))
		if err != nil {
			if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				// Cancelled before the commit point: nothing was written
				// and the client no longer waits for an answer.
				return nil, err
			}
			return envelopeResult(t.name, err), nil
		}
		return jsonResult(map[string]any(res), false), nil
	}
}

// progressFunc sends notifications/progress for requests that asked for
// them, keeping progress strictly increasing.
func progressFunc(ctx context.Context, req *mcp.CallToolRequest) durable.ProgressFunc {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return nil
	}
	var mu sync.Mutex
	last := -1.0
	return func(done, total float64, msg string) {
		mu.Lock()
		defer mu.Unlock()
		if done <= last {
			return
		}
		last = done
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: done, Total: total, Message: msg})
	}
}

// envelopeResult renders err as the envelope with context.tool set.
// Errors that are not *durable.Error (infrastructure failures) become
// write_corruption/unknown so the model still gets a typed answer.
func envelopeResult(toolName string, err error) *mcp.CallToolResult {
	var e *durable.Error
	if !errors.As(err, &e) {
		e = &durable.Error{Kind: durable.KindWriteCorruption, Reason: durable.ReasonUnknown, Action: durable.ActionAbort,
			Context: map[string]any{"reason": "internal_error", "detail": err.Error()}}
	}
	env := e.Envelope()
	ctx := env["context"].(map[string]any)
	if _, ok := ctx["tool"]; !ok {
		ctx["tool"] = toolName
	}
	return jsonResult(env, true)
}

// jsonResult puts obj in content[0] as compact sorted JSON and, as the same
// bytes, in structuredContent. Envelopes are ASCII-escaped like Resilient
// Write's; results keep UTF-8 (large non-ASCII payloads would triple).
func jsonResult(obj map[string]any, isError bool) *mcp.CallToolResult {
	marshal := durable.MarshalCompact
	if isError {
		marshal = durable.MarshalASCII
	}
	data, err := marshal(obj)
	if err != nil {
		data, _ = durable.MarshalCompact((&durable.Error{Kind: durable.KindWriteCorruption, Reason: durable.ReasonEncoding,
			Action: durable.ActionAbort, Context: map[string]any{"reason": "result_not_encodable", "detail": err.Error()}}).Envelope())
		isError = true
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(data)}},
		StructuredContent: json.RawMessage(data),
		IsError:           isError,
	}
}
