package durable

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of rw.read.
const (
	readMaxFile    = 256 << 20 // larger files are refused: quota_exceeded/split
	readMaxContent = 1 << 20   // returned content per call; more sets truncated
)

// ReadParams are rw.read's arguments. At most one of a line range
// (StartLine/EndLine, 1-based, inclusive), Head or Tail may be given.
type ReadParams struct {
	Path      string
	StartLine *int
	EndLine   *int
	Head      *int
	Tail      *int
	Encoding  string // utf-8 (default) or base64 (whole file only)
}

// Read returns a text file (or a line range of it) with the SHA-256 and size
// of the whole file, to pass as expected_prev_sha256 to a later write or
// edit. Content above 1 MiB is cut at a line boundary (truncated, with
// next_start_line). Files that are not valid UTF-8 must be read as base64.
func (w *Workspace) Read(ctx context.Context, p ReadParams) (Result, error) {
	if err := w.allow("rw.read", ""); err != nil {
		return nil, err
	}
	t, err := w.resolve(p.Path)
	if err != nil {
		return nil, err
	}
	// One open, checked on the descriptor, then read from it: a file swapped
	// for a hard link (or anything but a regular file) after any earlier
	// check is refused, never read.
	f, fi, err := openChecked(t.root.r, t.rel, p.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, staleErr(ActionAbort, "not_found", map[string]any{"path": p.Path})
	}
	if err != nil {
		return nil, fsError(err, p.Path)
	}
	defer f.Close()
	if fi.Size() > readMaxFile {
		return nil, newErr(KindQuotaExceeded, ReasonSizeLimit, ActionSplit, map[string]any{"path": p.Path, "reason": "file_too_large", "bytes": fi.Size(), "limit": readMaxFile})
	}
	ranged := p.StartLine != nil || p.EndLine != nil
	switch {
	case p.Head != nil && p.Tail != nil:
		return nil, encodingErr("head_and_tail_are_exclusive", nil)
	case ranged && (p.Head != nil || p.Tail != nil):
		return nil, encodingErr("line_range_and_head_tail_are_exclusive", nil)
	}
	data, err := readAllFrom(f, fi.Size(), readMaxFile)
	if errors.Is(err, errTooLarge) {
		return nil, newErr(KindQuotaExceeded, ReasonSizeLimit, ActionSplit, map[string]any{"path": p.Path, "reason": "file_too_large", "limit": readMaxFile})
	}
	if err != nil {
		return nil, fsError(err, p.Path)
	}
	res := Result{"ok": true, "path": t.disp, "sha256": sha256Hex(data), "bytes": len(data)}
	switch p.Encoding {
	case "base64":
		if ranged || p.Head != nil || p.Tail != nil {
			return nil, encodingErr("line_selection_needs_utf-8", nil)
		}
		if len(data) > readMaxContent {
			return nil, newErr(KindQuotaExceeded, ReasonSizeLimit, ActionSplit, map[string]any{"path": p.Path, "reason": "base64_read_too_large", "bytes": len(data), "limit": readMaxContent})
		}
		res["encoding"], res["content"] = "base64", base64.StdEncoding.EncodeToString(data)
		return res, nil
	case "", "utf-8":
	default:
		return nil, unsupportedEncoding(p.Encoding)
	}
	if !utf8.Valid(data) {
		e := policyErr(ReasonEncoding, "not_valid_utf8", map[string]any{"path": p.Path, "hint": "retry_with_encoding_base64"})
		e.Action = ActionRetryLater
		return nil, e
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	total := len(lines)
	start, end := 1, total
	switch {
	case p.Head != nil:
		if *p.Head < 0 {
			return nil, encodingErr("head_must_be_non_negative", nil)
		}
		end = min(total, *p.Head)
	case p.Tail != nil:
		if *p.Tail < 0 {
			return nil, encodingErr("tail_must_be_non_negative", nil)
		}
		start = max(1, total-*p.Tail+1)
	case ranged:
		if p.StartLine != nil {
			start = *p.StartLine
		}
		if p.EndLine != nil {
			end = min(total, *p.EndLine)
		}
		if start < 1 || (p.EndLine != nil && *p.EndLine < start-1) {
			return nil, encodingErr("bad_line_range", map[string]any{"start_line": start, "end_line": optInt(p.EndLine)})
		}
	}
	var b strings.Builder
	last := start - 1
	truncated := false
	for i := start; i <= end; i++ {
		l := lines[i-1]
		if b.Len()+len(l) > readMaxContent && i > start {
			truncated = true
			break
		}
		b.WriteString(l)
		last = i
	}
	res["encoding"], res["content"] = "utf-8", b.String()
	res["total_lines"], res["start_line"], res["end_line"] = total, start, last
	res["truncated"] = truncated
	if truncated {
		res["next_start_line"] = last + 1
	}
	return res, nil
}

func optInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// fileType names the kind of fi for results.
func fileType(fi fs.FileInfo) string {
	switch m := fi.Mode(); {
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "file"
	}
	return "other"
}

// Stat describes a path without reading it: exists:false (not an error)
// when absent; type, size, octal mode, mtime and link count otherwise, and
// the SHA-256 of a regular, singly linked file.
func (w *Workspace) Stat(ctx context.Context, p string) (Result, error) {
	if err := w.allow("rw.stat", ""); err != nil {
		return nil, err
	}
	t, err := w.resolve(p)
	if err != nil {
		return nil, err
	}
	fi, err := t.root.r.Lstat(t.rel)
	if errors.Is(err, fs.ErrNotExist) {
		return Result{"ok": true, "path": t.disp, "exists": false}, nil
	}
	if err != nil {
		return nil, fsError(err, p)
	}
	res := Result{
		"ok": true, "path": t.disp, "exists": true, "type": fileType(fi), "bytes": fi.Size(),
		"mode": fmt.Sprintf("%04o", uint32(fi.Mode().Perm())), "mtime": fi.ModTime().UTC().Format(time.RFC3339Nano),
		"nlink": linkCount(fi),
	}
	if fi.Mode().IsRegular() && linkCount(fi) == 1 && fi.Size() <= readMaxFile {
		// Hash what the checked descriptor holds, and only if it is still
		// the file just described.
		if data, dfi, err := readChecked(t.root.r, t.rel, p, readMaxFile); err == nil && os.SameFile(fi, dfi) {
			res["sha256"] = sha256Hex(data)
		}
	}
	return res, nil
}
