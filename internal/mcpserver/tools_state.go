package mcpserver

import (
	"context"

	"github.com/apiary-dev/apiary/internal/durable"
)

// scratchTools: rw.scratch_put, rw.scratch_ref, rw.scratch_get.
func scratchTools(ws *durable.Workspace) []tool {
	enc := param{name: "encoding", typ: tString, enum: []string{"utf-8", "base64"}, def: "utf-8", desc: "utf-8 text, or base64 for binary."}
	return []tool{
		{
			name:  "rw.scratch_put",
			title: "Stash material outside the working tree",
			desc: "Store raw material (credentials, binaries, PII) that must be kept but not committed, addressed by its " +
				"SHA-256; identical bytes are stored once. Labels are aliases. Returns a warning if the state directory " +
				"is not git-ignored.",
			params: []param{
				{name: "content", typ: tString, required: true, desc: "The material; base64 when encoding is base64."},
				{name: "label", typ: tString, desc: "Optional alias."},
				{name: "content_type", typ: tString, desc: "Optional MIME-like type."},
				{name: "notes", typ: tString, desc: "Optional free-form notes, kept in the index."},
				enc,
			},
			out: map[string]any{"sha256": oString, "scratch_path": oString, "bytes": oInteger, "deduped": oBoolean, "journal_id": oNullable("string"), "warnings": oArray},
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.ScratchPut(ctx, durable.ScratchPutParams{Content: a.str("content"), Label: a.optStr("label"), ContentType: a.optStr("content_type"), Notes: a.optStr("notes"), Encoding: a.str("encoding")})
			},
		},
		{
			name:  "rw.scratch_ref",
			title: "Look up stashed material",
			desc:  "Find the latest stash entry by sha256 and/or label without returning its content.",
			params: []param{
				{name: "sha256", typ: tString, desc: "Lower-case hex SHA-256."},
				{name: "label", typ: tString, desc: "Alias given at put time."},
			},
			out:      map[string]any{"entry": oObject, "scratch_path": oString, "bin_exists": oBoolean, "alias_count": oInteger},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.ScratchRef(ctx, a.optStr("sha256"), a.optStr("label"))
			},
		},
		{
			name:  "rw.scratch_get",
			title: "Read stashed material",
			desc:  "Return stashed content by hash after re-checking it. Refused when the server runs the stash write-only.",
			params: []param{
				{name: "sha256", typ: tString, required: true, desc: "Lower-case hex SHA-256."},
				enc,
			},
			out:      map[string]any{"sha256": oString, "content": oString, "encoding": oString, "bytes": oInteger, "content_type": oNullable("string"), "label": oNullable("string")},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.ScratchGet(ctx, a.str("sha256"), a.str("encoding"))
			},
		},
	}
}

// handoffTools: rw.handoff_write, rw.handoff_read.
func handoffTools(ws *durable.Workspace) []tool {
	drift := map[string]any{"handoff_path": oString, "drift_warnings": oArray, "checkpoint_refs": oArray}
	wout := map[string]any{"sha256": oString, "bytes": oInteger, "journal_id": oString}
	for k, v := range drift {
		wout[k] = v
	}
	rout := map[string]any{"envelope": oObject, "body": oString}
	for k, v := range drift {
		rout[k] = v
	}
	return []tool{
		{
			name:  "rw.handoff_write",
			title: "Write a handoff for the next agent",
			desc: "Save task state as HANDOFF.md: YAML front matter (task_id, status complete|partial|blocked|handed_off, " +
				"agent, summary, next_steps, last_good_state [{path, sha256}], …) and a Markdown body. Reports files " +
				"that no longer match last_good_state and lists saved checkpoints.",
			params: []param{
				{name: "envelope", typ: tObject, required: true, desc: "The handoff fields; task_id, status, agent, summary, next_steps and last_good_state are required."},
				{name: "body", typ: tString, def: "", desc: "Free-form Markdown after the front matter."},
				{name: "path", typ: tString, def: durable.DefaultHandoffPath, desc: "Destination (default HANDOFF.md)."},
				{name: "archive", typ: tBoolean, def: false, desc: "Keep a copy of the previous handoff in the state directory."},
			},
			out: wout, destructive: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.HandoffWrite(ctx, durable.HandoffWriteParams{Envelope: a.raw("envelope"), Body: a.str("body"), Path: a.str("path"), Archive: a.boolean("archive", false)})
			},
		},
		{
			name:     "rw.handoff_read",
			title:    "Read the handoff",
			desc:     "Parse HANDOFF.md to resume a task: the envelope, the body, drift warnings for changed files, and saved checkpoints.",
			params:   []param{{name: "path", typ: tString, def: durable.DefaultHandoffPath, desc: "Handoff file (default HANDOFF.md)."}},
			out:      rout,
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.HandoffRead(ctx, a.str("path"))
			},
		},
	}
}

// checkpointTools: rw.checkpoint, rw.checkpoint_read, rw.checkpoint_list,
// rw.checkpoint_cleanup.
func checkpointTools(ws *durable.Workspace) []tool {
	name := param{name: "name", typ: tString, required: true, pattern: sessionPattern, desc: "Checkpoint name."}
	return []tool{
		{
			name:  "rw.checkpoint",
			title: "Save intermediate data",
			desc: "Save a named snapshot of intermediate data (any JSON) to disk, so it survives context compaction. " +
				"Overwriting keeps created_at. Written transactionally at any size; progress notifications when asked.",
			params: []param{
				name,
				{name: "data", typ: tAny, required: true, desc: "Any JSON value."},
				{name: "format", typ: tString, enum: []string{"json", "yaml", "markdown"}, def: "json", desc: "Format label kept with the data."},
				{name: "ttl", typ: tString, def: "session", desc: "session, permanent, or an ISO-8601 duration such as PT1H."},
			},
			out: map[string]any{
				"name": oString, "format": oString, "ttl": oString, "checkpoint_path": oString, "sha256": oString, "bytes": oInteger,
				"journal_id": oString, "created_at": oAny, "updated_at": oString, "chunked": oBoolean,
			},
			destructive: true, idempotent: true,
			call: func(ctx context.Context, a args, progress durable.ProgressFunc) (durable.Result, error) {
				return ws.Checkpoint(ctx, durable.CheckpointParams{Name: a.str("name"), Data: a.raw("data"), Format: a.str("format"), TTL: a.str("ttl"), Progress: progress})
			},
		},
		{
			name:     "rw.checkpoint_read",
			title:    "Read a checkpoint",
			desc:     "Return a saved checkpoint's data and metadata.",
			params:   []param{name},
			out:      map[string]any{"name": oAny, "format": oAny, "ttl": oAny, "created_at": oAny, "updated_at": oAny, "data": oAny, "sha256": oString, "bytes": oInteger},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.CheckpointRead(ctx, a.str("name"))
			},
		},
		{
			name:     "rw.checkpoint_list",
			title:    "List checkpoints",
			desc:     "List saved checkpoints with size, format, TTL and timestamps, without their data.",
			out:      map[string]any{"checkpoints": oArray, "count": oInteger},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.CheckpointList(ctx)
			},
		},
		{
			name:        "rw.checkpoint_cleanup",
			title:       "Remove expired checkpoints",
			desc:        "Delete session checkpoints (unless include_session is false), checkpoints whose ISO-duration TTL has passed, and corrupt ones; permanent ones stay.",
			params:      []param{{name: "include_session", typ: tBoolean, def: true, desc: "Also remove ttl=session checkpoints."}},
			out:         map[string]any{"removed": oArray, "kept": oInteger},
			destructive: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.CheckpointCleanup(ctx, a.boolean("include_session", true))
			},
		},
	}
}

// inspectTools: rw.validate, rw.analytics.
func inspectTools(ws *durable.Workspace) []tool {
	return []tool{
		{
			name:  "rw.validate",
			title: "Check syntax before writing",
			desc: "Check text as LaTeX (braces, environments), JSON, YAML, TOML, Go, Python or Markdown (unclosed fences), " +
				"picked by format_hint, the target_path extension or the content. Always ok:true; valid and errors " +
				"(line, col, message, severity) carry the findings.",
			params: []param{
				{name: "content", typ: tString, required: true, desc: "Text to check."},
				{name: "format_hint", typ: tString, enum: []string{"latex", "json", "python", "yaml", "toml", "go", "markdown"}, desc: "Format; detected when omitted."},
				{name: "target_path", typ: tString, desc: "Path whose extension names the format."},
			},
			out:      map[string]any{"valid": oBoolean, "format": oString, "errors": oArray, "summary": oString},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.Validate(ctx, durable.ValidateParams{Content: a.str("content"), FormatHint: a.optStr("format_hint"), TargetPath: a.optStr("target_path")})
			},
		},
		{
			name:  "rw.analytics",
			title: "Summarise the write journal",
			desc:  "Write counts by mode and caller, the hottest paths, chunk sessions, checkpoint saves, velocity and the time span, optionally since a timestamp.",
			params: []param{
				{name: "since", typ: tString, desc: "ISO-8601 timestamp; earlier rows are ignored."},
				{name: "session_filter", typ: tString, desc: "Only this chunk session in sessions."},
			},
			out: map[string]any{
				"total_writes": oInteger, "unique_paths": oInteger, "total_bytes_written": oInteger, "by_mode": oObject, "by_caller": oObject,
				"timeline": oArray, "hot_paths": oArray, "sessions": oObject, "checkpoints": oObject, "write_velocity": oObject, "period": oObject,
			},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.Analytics(ctx, durable.AnalyticsParams{Since: a.optStr("since"), SessionFilter: a.optStr("session_filter")})
			},
		},
	}
}
