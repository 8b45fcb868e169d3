// Package mcpserver binds package durable to the Model Context Protocol with
// the official Go SDK (github.com/modelcontextprotocol/go-sdk, the only
// package of apiary that imports it).
//
// New registers 27 tools: Resilient Write's 20 — rw.risk_score,
// rw.safe_write, rw.chunk_write, rw.chunk_append, rw.chunk_compose,
// rw.chunk_reset, rw.chunk_status, rw.chunk_preview, rw.scratch_put,
// rw.scratch_ref, rw.scratch_get, rw.handoff_write, rw.handoff_read,
// rw.journal_tail, rw.validate, rw.analytics, rw.checkpoint,
// rw.checkpoint_read, rw.checkpoint_list, rw.checkpoint_cleanup — with the
// same names, arguments and result fields, and the read/edit surface
// rw.read, rw.edit, rw.list, rw.move, rw.mkdir, rw.stat, rw.search. One file
// per tool family (tools_*.go) declares each tool's parameters; the input
// schema (additionalProperties:false) is generated from them.
//
// # Results
//
// Every result is one text block holding compact JSON with sorted keys
// (Resilient Write's format), the same object as structuredContent, and
// isError exactly when it is an error envelope. Each tool's outputSchema is
// anyOf[its success object, the envelope schema]. Tools carry titles and
// annotations (readOnlyHint, destructiveHint, idempotentHint,
// openWorldHint:false). Arguments are validated here, not by the SDK, so a
// bad argument is a policy_violation/encoding envelope too; an unknown tool
// is answered with policy_violation and context.unknown_tool (a receiving
// middleware), not JSON-RPC −32602, as Resilient Write does. Every envelope
// carries context.tool.
//
// # Protocol
//
// The server speaks every version the SDK does: the 2026-07-28 stateless
// protocol (server/discover, per-request _meta) and the 2025-11-25
// handshake with the older ones. ServeStdio serves newline-delimited
// JSON-RPC with its own transport, because the SDK's ends the session at the
// first line it cannot decode: here a line that is not JSON is answered
// with -32700, one that is not a JSON-RPC 2.0 message with -32600 (with the
// request's id when usable, else null), an empty batch with one -32600, a
// batch with one array once its requests are answered, and the server keeps
// serving. Error responses the SDK leaves at code 0 get the spec's code, and
// a request the client cancels (notifications/cancelled) is never answered.
// A tools/call's arguments are split out of the line in one validating pass
// and handed to the handler through a _meta token, so a 1 MiB file is
// unescaped once rather than scanned five times. At stdin EOF it lets
// requests already read finish and be answered (up to DrainTimeout) before
// returning. HTTPHandler serves
// streamable HTTP at /mcp in the SDK's stateless mode, which is required for
// 2026-07-28 and serves handshake-era clients as well (no Mcp-Session-Id);
// a foreign Origin gets 403, and a tools/call larger than the 4 MiB body
// limit is answered with a quota_exceeded/size_limit/split envelope that
// points to rw.chunk_append, instead of a bare 413. ServeHTTP runs it with a
// graceful shutdown. Long operations (rw.chunk_compose, rw.chunk_preview,
// rw.checkpoint, rw.search) send notifications/progress, strictly
// increasing, when the request carries a progress token. Cancellation
// reaches durable through the handler's context and takes effect only
// before a write's commit point.
//
// # Claude Code
//
// Anthropic's API allows only [a-zA-Z0-9_-] in tool names, so Claude Code
// exposes an MCP tool as mcp__<server>__<tool> with every other character
// replaced by "_": with the server configured under the key "durable" in
// --mcp-config, rw.safe_write is mcp__durable__rw_safe_write (observed with
// Claude Code 2.1.332; TestClaudeCode asserts it). Use that name in
// --allowedTools.
package mcpserver
