package mcpserver

import (
	"context"

	"github.com/apiary-dev/apiary/internal/durable"
)

// writeTools: rw.safe_write, rw.risk_score, rw.journal_tail.
func writeTools(ws *durable.Workspace) []tool {
	return []tool{
		{
			name:  "rw.safe_write",
			title: "Write a file transactionally",
			desc: "Create, overwrite or append to a workspace file atomically: temp file in the same directory, fsync, " +
				"verify, rename (create never replaces a file), directory fsync, then a journal row. Pass " +
				"expected_prev_sha256 (from rw.read) to refuse a write over a file that changed. classify:true runs " +
				"rw.risk_score first and refuses risky content with a blocked envelope whose retry_budget counts down. " +
				"Failures are typed envelopes, not free text.",
			params: []param{
				{name: "path", typ: tString, required: true, desc: "Workspace-relative destination path."},
				{name: "content", typ: tString, required: true, desc: "The text to write (UTF-8)."},
				{name: "mode", typ: tString, enum: []string{"create", "overwrite", "append"}, def: "create", desc: "create refuses an existing file; append rewrites the whole file with content added."},
				{name: "expected_prev_sha256", typ: tString, desc: "Optimistic-concurrency guard: the current file's SHA-256, or \"\" for must-not-exist."},
				{name: "classify", typ: tBoolean, def: false, desc: "Score the content first and refuse it at or above classify_reject_at."},
				{name: "classify_reject_at", typ: tString, enum: []string{"low", "medium", "high"}, def: "high", desc: "Lowest verdict that refuses the write."},
			},
			out: map[string]any{"path": oString, "sha256": oString, "bytes": oInteger, "mode_applied": oString, "journal_id": oString, "wrote_at": oString},
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.SafeWrite(ctx, durable.SafeWriteParams{
					Path: a.str("path"), Content: a.str("content"), Mode: a.str("mode"),
					ExpectedPrevSHA256: a.optStr("expected_prev_sha256"), Classify: a.boolean("classify", false),
					ClassifyRejectAt: a.str("classify_reject_at"),
				})
			},
		},
		{
			name:  "rw.risk_score",
			title: "Score draft content for secrets and size",
			desc: "Check draft text before writing it: deterministic patterns (cloud and API keys, private keys, tokens, " +
				"JWTs, PII, long base64) and size rules give a score, a verdict (safe, low, medium, high), the hits " +
				"(matches cut to a short prefix) and suggested actions (redact, split, escape). No network, no model.",
			params: []param{
				{name: "content", typ: tString, required: true, desc: "Draft text to classify."},
				{name: "language_hint", typ: tString, desc: "Optional format hint (json, latex, …), echoed back."},
				{name: "target_path", typ: tString, desc: "Optional destination path, echoed back."},
			},
			out: map[string]any{
				"score": oNumber, "verdict": oString, "bytes": oInteger, "line_count": oInteger, "max_line_len": oInteger,
				"detected_patterns": oArray, "suggested_actions": oArray, "language_hint": oNullable("string"), "target_path": oNullable("string"),
			},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.RiskScore(ctx, durable.RiskScoreParams{Content: a.str("content"), LanguageHint: a.optStr("language_hint"), TargetPath: a.optStr("target_path")})
			},
		},
		{
			name:  "rw.journal_tail",
			title: "Show recent writes",
			desc:  "Return the last n rows of the write journal (oldest first), optionally only for one path or one mode.",
			params: []param{
				{name: "n", typ: tInteger, min: intp(1), def: 20, desc: "How many rows."},
				{name: "filter_path", typ: tString, desc: "Only rows for exactly this path."},
				{name: "filter_mode", typ: tString, desc: "Only rows with this mode (create, overwrite, append, edit, move)."},
			},
			out:      map[string]any{"entries": oArray},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.JournalTail(ctx, durable.JournalTailParams{N: a.optInt("n"), FilterPath: a.optStr("filter_path"), FilterMode: a.optStr("filter_mode")})
			},
		},
	}
}
