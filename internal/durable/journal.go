package durable

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
)

// journalFile is the journal's name inside the state directory.
const journalFile = "journal.jsonl"

// stateRoot opens the state directory through the workspace root, creating
// it when create is set. It returns (nil, nil) when the directory does not
// exist and create is false. A state directory replaced by a symlink leading
// out is refused by os.Root.
func (w *Workspace) stateRoot(create bool) (*os.Root, error) {
	if create {
		if err := ensureDir(w.ws().r, w.state, w.state); err != nil {
			return nil, err
		}
	}
	st, err := w.ws().r.OpenRoot(w.state)
	if errors.Is(err, fs.ErrNotExist) && !create {
		return nil, nil
	}
	if err != nil {
		return nil, fsError(err, w.state)
	}
	return st, nil
}

// statePath returns the workspace-relative display path of a state file.
func (w *Workspace) statePath(rel string) string { return w.state + "/" + rel }

// appendJournal appends one row for a successful write and fsyncs it before
// returning, so a reply never names a write the journal could lose. Rows are
// compact JSON with sorted keys: bytes, caller, journal_id, mode, path,
// sha256, ts (plus any extra keys). A journal that does not end in a newline
// (a torn or hand-written last line) gets one first.
func (w *Workspace) appendJournal(disp, sha string, n int64, mode string, extra map[string]any) (id, ts string, err error) {
	now := w.nowUTC()
	ts = isoSeconds(now)
	id = "wj_" + hex12(uint64(now.UnixNano())&(1<<48-1)) + w.randHex(4)
	row := map[string]any{"bytes": n, "caller": w.cfg.Caller, "journal_id": id, "mode": mode, "path": disp, "sha256": sha, "ts": ts}
	for k, v := range extra {
		row[k] = v
	}
	line, err := MarshalASCII(row)
	if err != nil {
		return "", "", err
	}
	st, err := w.stateRoot(true)
	if err != nil {
		return "", "", err
	}
	defer st.Close()
	w.journal.Lock()
	defer w.journal.Unlock()
	_, statErr := st.Lstat(journalFile)
	f, err := st.OpenFile(journalFile, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return "", "", fsError(err, w.statePath(journalFile))
	}
	defer f.Close()
	prefix, err := w.terminateJournal(f)
	if err != nil {
		return "", "", fsError(err, w.statePath(journalFile))
	}
	line = append(prefix, line...)
	line = append(line, '\n')
	if _, err := f.Write(line); err != nil {
		return "", "", fsError(err, w.statePath(journalFile))
	}
	if err := f.Sync(); err != nil {
		return "", "", fsError(err, w.statePath(journalFile))
	}
	if err := f.Close(); err != nil {
		return "", "", fsError(err, w.statePath(journalFile))
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		if err := syncDir(st, "."); err != nil {
			return "", "", fsError(err, w.statePath(journalFile))
		}
	}
	return id, ts, nil
}

// maxTornLine bounds how much of an unterminated last line
// terminateJournal examines.
const maxTornLine = 1 << 20

// terminateJournal makes the journal end at a line boundary before an
// append. An unterminated last line that parses (written by hand) gets its
// newline (returned as a prefix for the append); one that does not is a
// torn append of a crashed writer and is cut off, so it can never become a
// corrupt line in the middle of the journal.
func (w *Workspace) terminateJournal(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return nil, err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, fi.Size()-1); err != nil || last[0] == '\n' {
		return nil, err
	}
	n := min(fi.Size(), maxTornLine)
	tail := make([]byte, n)
	if _, err := f.ReadAt(tail, fi.Size()-n); err != nil {
		return nil, err
	}
	if tail[n-1] == '\n' {
		return nil, nil
	}
	i := bytes.LastIndexByte(tail, '\n')
	if i < 0 && n < fi.Size() {
		return []byte("\n"), nil // a huge hand-written line: leave it be
	}
	var row map[string]any
	if decodeJSON(bytes.TrimSpace(tail[i+1:]), &row) == nil && row != nil {
		return []byte("\n"), nil
	}
	w.log.Warn("durable: cutting a torn journal line", "bytes", int(n)-i-1)
	if err := f.Truncate(fi.Size() - n + int64(i) + 1); err != nil {
		return nil, err
	}
	return nil, nil
}

// hex12 formats v as 12 lower-case hex digits.
func hex12(v uint64) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 12)
	for i := 11; i >= 0; i-- {
		b[i] = digits[v&0xF]
		v >>= 4
	}
	return string(b)
}

// readJournal returns every journal row, oldest first. Rows written by hand
// are accepted as long as they are JSON objects. A final line without a
// newline that does not parse is a torn append and is skipped; any other bad
// line is write_corruption/encoding with the line (cut to 200 bytes).
func (w *Workspace) readJournal() ([]map[string]any, error) {
	st, err := w.stateRoot(false)
	if err != nil || st == nil {
		return nil, err
	}
	defer st.Close()
	data, err := st.ReadFile(journalFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fsError(err, w.statePath(journalFile))
	}
	return parseJSONLines(data, func(line string) error {
		return corruptErr(ReasonEncoding, "", map[string]any{"journal": w.statePath(journalFile), "bad_line": cut(line, 200)})
	})
}

// parseJSONLines parses newline-delimited JSON objects, skipping blank lines
// and a torn (unterminated, unparsable) final line; bad reports other lines.
func parseJSONLines(data []byte, bad func(line string) error) ([]map[string]any, error) {
	var rows []map[string]any
	lines := bytes.Split(data, []byte("\n"))
	for i, raw := range lines {
		line := strings.TrimSpace(string(raw))
		if line == "" {
			continue
		}
		var row map[string]any
		if err := decodeJSON([]byte(line), &row); err != nil || row == nil {
			if i == len(lines)-1 {
				continue // torn final append: no newline yet
			}
			return nil, bad(line)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// cut returns s cut to at most n bytes.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// JournalTailParams are rw.journal_tail's arguments.
type JournalTailParams struct {
	N          *int    // default 20, at least 1
	FilterPath *string // exact path
	FilterMode *string
}

// JournalTail returns the last N rows after filtering, oldest first.
func (w *Workspace) JournalTail(ctx context.Context, p JournalTailParams) (Result, error) {
	if err := w.allow("rw.journal_tail", ""); err != nil {
		return nil, err
	}
	n := 20
	if p.N != nil {
		n = *p.N
	}
	if n < 1 {
		return nil, encodingErr("n_must_be_at_least_1", map[string]any{"n": n})
	}
	rows, err := w.readJournal()
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, r := range rows {
		if p.FilterPath != nil && r["path"] != *p.FilterPath {
			continue
		}
		if p.FilterMode != nil && r["mode"] != *p.FilterMode {
			continue
		}
		out = append(out, r)
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return Result{"ok": true, "entries": out}, nil
}
