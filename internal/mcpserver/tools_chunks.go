package mcpserver

import (
	"context"

	"github.com/apiary-dev/apiary/internal/durable"
)

const sessionPattern = `^[A-Za-z0-9_\-]{1,64}$`

func sessionParam(desc string) param {
	return param{name: "session", typ: tString, required: true, pattern: sessionPattern, desc: desc}
}

var totalParam = param{name: "total_expected", typ: tInteger, min: intp(1), max: intp(999), desc: "How many parts the file will have; compose refuses until exactly that many exist."}

// chunkTools: rw.chunk_write, rw.chunk_append, rw.chunk_compose,
// rw.chunk_reset, rw.chunk_status, rw.chunk_preview.
func chunkTools(ws *durable.Workspace) []tool {
	partOut := map[string]any{"session": oString, "index": oInteger, "chunk_path": oString, "sha256": oString, "bytes": oInteger, "journal_id": oString}
	composeOut := map[string]any{"session": oString, "output_path": oString, "sha256": oString, "bytes": oInteger, "chunk_count": oInteger, "chunk_hashes": oArray, "journal_id": oString, "cleaned_up": oBoolean}
	return []tool{
		{
			name:  "rw.chunk_write",
			title: "Write one numbered part of a large file",
			desc: "Store part <index> of a session (a large file written in pieces). Rewriting a part is safe to retry; " +
				"each part is journaled. Assemble the parts with rw.chunk_compose.",
			params: []param{
				sessionParam("Session name; its parts are composed together."),
				{name: "index", typ: tInteger, required: true, min: intp(1), max: intp(999), desc: "1-based part number."},
				{name: "content", typ: tString, required: true, desc: "The part's text."},
				totalParam,
			},
			out: partOut, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.ChunkWrite(ctx, durable.ChunkWriteParams{Session: a.str("session"), Index: a.integer("index"), Content: a.str("content"), TotalExpected: a.optInt("total_expected")})
			},
		},
		{
			name:  "rw.chunk_append",
			title: "Append the next part of a large file",
			desc: "Store content as the next part of a session (highest existing index + 1, or 1), so the caller need " +
				"not count. Concurrent appends each get their own part. If a session is interrupted, the parts " +
				"already written stay on disk.",
			params: []param{
				sessionParam("Session name; its parts are composed together."),
				{name: "content", typ: tString, required: true, desc: "The part's text."},
				totalParam,
			},
			out: partOut,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.ChunkAppend(ctx, durable.ChunkAppendParams{Session: a.str("session"), Content: a.str("content"), TotalExpected: a.optInt("total_expected")})
			},
		},
		{
			name:  "rw.chunk_compose",
			title: "Assemble a session into its file",
			desc: "Concatenate parts 1..N of a session (refusing gaps or a count different from total_expected) and " +
				"write the result to output_path transactionally, like rw.safe_write. cleanup:true removes the session " +
				"afterwards. Sends progress notifications when asked.",
			params: []param{
				{name: "session", typ: tString, required: true, pattern: sessionPattern, desc: "Session to assemble."},
				{name: "output_path", typ: tString, required: true, desc: "Workspace-relative destination."},
				{name: "separator", typ: tString, def: "", desc: "Inserted between parts."},
				{name: "cleanup", typ: tBoolean, def: false, desc: "Remove the session after a successful compose."},
			},
			out: composeOut, destructive: true,
			call: func(ctx context.Context, a args, progress durable.ProgressFunc) (durable.Result, error) {
				return ws.ChunkCompose(ctx, durable.ChunkComposeParams{Session: a.str("session"), OutputPath: a.str("output_path"), Separator: a.str("separator"), Cleanup: a.boolean("cleanup", false), Progress: progress})
			},
		},
		{
			name:        "rw.chunk_reset",
			title:       "Delete a session",
			desc:        "Remove a session's parts and manifest. Reports how many files were removed and whether it existed.",
			params:      []param{{name: "session", typ: tString, required: true, pattern: sessionPattern, desc: "Session to delete."}},
			out:         map[string]any{"session": oString, "removed": oInteger, "existed": oBoolean},
			destructive: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.ChunkReset(ctx, a.str("session"))
			},
		},
		{
			name:     "rw.chunk_status",
			title:    "Inspect a session",
			desc:     "Report whether a session exists, its total_expected and which part numbers are present, to decide which part to (re)write.",
			params:   []param{{name: "session", typ: tString, required: true, pattern: sessionPattern, desc: "Session to inspect."}},
			out:      map[string]any{"session": oString, "exists": oBoolean, "total_expected": oNullable("integer"), "present_indices": oArray, "chunk_dir": oString},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.ChunkStatus(ctx, a.str("session"))
			},
		},
		{
			name:  "rw.chunk_preview",
			title: "Preview a composed session",
			desc:  "Return what rw.chunk_compose would write, after the same checks, without writing anything. Pair with rw.validate.",
			params: []param{
				{name: "session", typ: tString, required: true, pattern: sessionPattern, desc: "Session to preview."},
				{name: "separator", typ: tString, def: "", desc: "Inserted between parts."},
			},
			out:      map[string]any{"session": oString, "content": oString, "chunk_count": oInteger, "chunk_hashes": oArray, "total_bytes": oInteger, "preview": oBoolean},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, progress durable.ProgressFunc) (durable.Result, error) {
				return ws.ChunkPreview(ctx, durable.ChunkPreviewParams{Session: a.str("session"), Separator: a.str("separator"), Progress: progress})
			},
		},
	}
}
