package durable

import (
	"context"
	"strings"
	"unicode/utf8"
)

// EditParams are rw.edit's arguments.
type EditParams struct {
	Path      string
	OldString string
	NewString string
	// ExpectedCount is how many occurrences must be replaced (default 1):
	// any other count refuses the edit, so an ambiguous match never edits
	// the wrong place.
	ExpectedCount      *int
	DryRun             bool
	ExpectedPrevSHA256 *string
}

// Edit replaces exact occurrences of OldString with NewString. In a file
// whose lines all end in CRLF, "\n" in both strings means CRLF, so line
// endings are preserved. DryRun returns the unified diff without writing;
// otherwise the file is rewritten transactionally (mode kept) and journaled
// with mode "edit".
func (w *Workspace) Edit(ctx context.Context, p EditParams) (Result, error) {
	const tool = "rw.edit"
	if err := w.allow(tool, ""); err != nil {
		return nil, err
	}
	if p.OldString == "" {
		return nil, encodingErr("old_string_empty", nil)
	}
	if p.OldString == p.NewString {
		return nil, encodingErr("old_and_new_string_identical", nil)
	}
	want := 1
	if p.ExpectedCount != nil {
		want = *p.ExpectedCount
	}
	if want < 1 {
		return nil, encodingErr("expected_count_must_be_at_least_1", map[string]any{"expected_count": want})
	}
	t, err := w.resolve(p.Path)
	if err != nil {
		return nil, err
	}
	if err := w.allow(tool, t.disp); err != nil {
		return nil, err
	}
	h, err := w.acquire(ctx, lockName(classPath, t.lockKey()), !p.DryRun, true)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	old, exists, err := w.readExisting(t)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, staleErr(ActionAbort, "not_found", map[string]any{"path": p.Path})
	}
	cur := sha256Hex(old)
	if p.ExpectedPrevSHA256 != nil && *p.ExpectedPrevSHA256 != cur {
		return nil, staleErr(ActionAskUser, "", map[string]any{"path": p.Path, "expected_prev_sha256": *p.ExpectedPrevSHA256, "actual_prev_sha256": cur})
	}
	if !utf8.Valid(old) {
		return nil, encodingErr("not_valid_utf8", map[string]any{"path": p.Path})
	}
	text := string(old)
	oldS, newS := p.OldString, p.NewString
	if crlfOnly(text) {
		oldS, newS = toCRLF(oldS), toCRLF(newS)
	}
	n := strings.Count(text, oldS)
	if n != want {
		return nil, staleErr(ActionAskUser, "occurrence_count_mismatch", map[string]any{"path": p.Path, "expected_count": want, "actual_count": n})
	}
	updated := strings.ReplaceAll(text, oldS, newS)
	diff, cutDiff := unifiedDiff(t.disp, text, updated)
	res := Result{"ok": true, "path": t.disp, "replacements": n, "diff": diff, "diff_truncated": cutDiff, "dry_run": p.DryRun}
	if p.DryRun {
		res["sha256"], res["new_sha256"], res["bytes"] = cur, sha256Hex([]byte(updated)), len(updated)
		return res, nil
	}
	wr, err := w.writeUserLocked(ctx, h, t, []byte(updated), "edit", false)
	if err != nil {
		return nil, err
	}
	res["sha256"], res["bytes"], res["journal_id"], res["wrote_at"] = wr.sha, wr.size, wr.j.id, wr.j.ts
	return wr.j.annotate(res), nil
}

// crlfOnly reports whether text has line breaks and every one is CRLF.
func crlfOnly(text string) bool {
	n := strings.Count(text, "\n")
	return n > 0 && strings.Count(text, "\r\n") == n
}

// toCRLF turns bare "\n" into "\r\n".
func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}
