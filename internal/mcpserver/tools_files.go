package mcpserver

import (
	"context"

	"github.com/apiary-dev/apiary/internal/durable"
)

// fileTools: rw.read, rw.edit, rw.list, rw.move, rw.mkdir, rw.stat,
// rw.search — the read/edit surface, so this one server suffices.
func fileTools(ws *durable.Workspace) []tool {
	guard := param{name: "expected_prev_sha256", typ: tString, desc: "Refuse unless the file's current SHA-256 is this (\"\" = must not exist)."}
	return []tool{
		{
			name:  "rw.read",
			title: "Read a file",
			desc: "Read a text file, or lines start_line..end_line, or the first (head) or last (tail) N lines. Returns " +
				"the whole file's sha256 (pass it as expected_prev_sha256 to a later write or edit) and size. At most " +
				"1 MiB per call (truncated and next_start_line say where to continue); use encoding base64 for binary.",
			params: []param{
				{name: "path", typ: tString, required: true, desc: "Workspace-relative path."},
				{name: "start_line", typ: tInteger, min: intp(1), desc: "First line (1-based)."},
				{name: "end_line", typ: tInteger, min: intp(0), desc: "Last line (inclusive)."},
				{name: "head", typ: tInteger, min: intp(0), desc: "Only the first N lines."},
				{name: "tail", typ: tInteger, min: intp(0), desc: "Only the last N lines."},
				{name: "encoding", typ: tString, enum: []string{"utf-8", "base64"}, def: "utf-8", desc: "base64 returns the whole file's bytes."},
			},
			out: map[string]any{
				"path": oString, "content": oString, "encoding": oString, "sha256": oString, "bytes": oInteger, "total_lines": oInteger,
				"start_line": oInteger, "end_line": oInteger, "truncated": oBoolean, "next_start_line": oInteger,
			},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.Read(ctx, durable.ReadParams{Path: a.str("path"), StartLine: a.optInt("start_line"), EndLine: a.optInt("end_line"), Head: a.optInt("head"), Tail: a.optInt("tail"), Encoding: a.str("encoding")})
			},
		},
		{
			name:  "rw.edit",
			title: "Replace text in a file",
			desc: "Replace exact occurrences of old_string with new_string; the edit is refused unless there are exactly " +
				"expected_count of them (default 1). Line endings are preserved. dry_run:true returns the unified diff " +
				"without writing; otherwise the file is rewritten transactionally and journaled.",
			params: []param{
				{name: "path", typ: tString, required: true, desc: "Workspace-relative path of an existing file."},
				{name: "old_string", typ: tString, required: true, desc: "Exact text to replace."},
				{name: "new_string", typ: tString, required: true, desc: "Replacement text."},
				{name: "expected_count", typ: tInteger, min: intp(1), def: 1, desc: "How many occurrences must exist; all are replaced."},
				{name: "dry_run", typ: tBoolean, def: false, desc: "Only return the diff."},
				guard,
			},
			out: map[string]any{
				"path": oString, "replacements": oInteger, "diff": oString, "diff_truncated": oBoolean, "dry_run": oBoolean,
				"sha256": oString, "new_sha256": oString, "bytes": oInteger, "journal_id": oString, "wrote_at": oString,
			},
			destructive: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.Edit(ctx, durable.EditParams{Path: a.str("path"), OldString: a.str("old_string"), NewString: a.str("new_string"), ExpectedCount: a.optInt("expected_count"), DryRun: a.boolean("dry_run", false), ExpectedPrevSHA256: a.optStr("expected_prev_sha256")})
			},
		},
		{
			name:  "rw.list",
			title: "List a directory",
			desc:  "List a directory (path, type, bytes), as a tree down to depth, optionally filtered by a glob (** spans directories). Bounded by max_entries.",
			params: []param{
				{name: "path", typ: tString, def: ".", desc: "Directory (default the workspace)."},
				{name: "depth", typ: tInteger, min: intp(1), max: intp(20), desc: "Levels to descend (default 1; 20 with a glob)."},
				{name: "glob", typ: tString, desc: "Pattern on the listed-relative path, e.g. **/*.go."},
				{name: "max_entries", typ: tInteger, min: intp(1), max: intp(10000), def: 1000, desc: "At most this many entries."},
			},
			out:      map[string]any{"path": oString, "entries": oArray, "truncated": oBoolean},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.List(ctx, durable.ListParams{Path: a.str("path"), Depth: a.optInt("depth"), Glob: a.optStr("glob"), MaxEntries: a.optInt("max_entries")})
			},
		},
		{
			name:  "rw.move",
			title: "Move or rename",
			desc:  "Rename a file or directory. Never replaces an existing destination unless overwrite:true (and then only a file, optionally hash-guarded).",
			params: []param{
				{name: "from", typ: tString, required: true, desc: "Existing path."},
				{name: "to", typ: tString, required: true, desc: "New path; parents are created."},
				{name: "overwrite", typ: tBoolean, def: false, desc: "Allow replacing an existing file at to."},
				guard,
			},
			out:         map[string]any{"from": oString, "to": oString, "type": oString, "sha256": oString, "bytes": oInteger, "overwrote": oBoolean, "journal_id": oString, "wrote_at": oString},
			destructive: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.Move(ctx, durable.MoveParams{From: a.str("from"), To: a.str("to"), Overwrite: a.boolean("overwrite", false), ExpectedPrevSHA256: a.optStr("expected_prev_sha256")})
			},
		},
		{
			name:  "rw.mkdir",
			title: "Create a directory",
			desc:  "Create a directory and, unless parents is false, its missing parents. An existing directory is fine.",
			params: []param{
				{name: "path", typ: tString, required: true, desc: "Directory to create."},
				{name: "parents", typ: tBoolean, def: true, desc: "Create missing parents."},
			},
			out:        map[string]any{"path": oString, "created": oBoolean},
			idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.Mkdir(ctx, durable.MkdirParams{Path: a.str("path"), Parents: a.optBool("parents")})
			},
		},
		{
			name:     "rw.stat",
			title:    "Describe a path",
			desc:     "Whether a path exists, and its type, size, mode, mtime, link count and (for files) sha256.",
			params:   []param{{name: "path", typ: tString, required: true, desc: "Path to describe."}},
			out:      map[string]any{"path": oString, "exists": oBoolean, "type": oString, "bytes": oInteger, "mode": oString, "mtime": oString, "nlink": oInteger, "sha256": oString},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
				return ws.Stat(ctx, a.str("path"))
			},
		},
		{
			name:  "rw.search",
			title: "Search file contents",
			desc:  "Find lines matching a literal (default) or RE2 regular expression under a directory; skips binary files. At most max_results matches, lines cut to 300 characters.",
			params: []param{
				{name: "pattern", typ: tString, required: true, desc: "Text or regular expression."},
				{name: "path", typ: tString, def: ".", desc: "Directory to search."},
				{name: "regex", typ: tBoolean, def: false, desc: "Treat pattern as a regular expression."},
				{name: "glob", typ: tString, desc: "Only files matching this glob (on the path or the name)."},
				{name: "case_insensitive", typ: tBoolean, def: false, desc: "Ignore case."},
				{name: "max_results", typ: tInteger, min: intp(1), max: intp(1000), def: 100, desc: "At most this many matches."},
			},
			out:      map[string]any{"matches": oArray, "truncated": oBoolean, "files_scanned": oInteger},
			readOnly: true, idempotent: true,
			call: func(ctx context.Context, a args, progress durable.ProgressFunc) (durable.Result, error) {
				return ws.Search(ctx, durable.SearchParams{Pattern: a.str("pattern"), Path: a.str("path"), Regex: a.boolean("regex", false), Glob: a.optStr("glob"), CaseInsensitive: a.boolean("case_insensitive", false), MaxResults: a.optInt("max_results"), Progress: progress})
			},
		},
	}
}
