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

// newRow returns the journal row of a write: bytes, caller, journal_id,
// mode, path, sha256, ts, plus extra keys. Rows are made before the commit
// point, so a lock record and the journal name the same id.
func (w *Workspace) newRow(disp, sha string, n int64, mode string, extra map[string]any) map[string]any {
	now := w.nowUTC()
	id := "wj_" + hex12(uint64(now.UnixNano())&(1<<48-1)) + w.randHex(4)
	row := map[string]any{"bytes": n, "caller": w.cfg.Caller, "journal_id": id, "mode": mode, "path": disp, "sha256": sha, "ts": isoSeconds(now)}
	for k, v := range extra {
		row[k] = v
	}
	return row
}

// journaled is what became of a committed write's journal row.
type journaled struct {
	id, ts string
	// degraded is why the row could not be appended: the write landed, and
	// the row stays recorded in the lock file until a later holder (or the
	// next start) journals it, marked recovered.
	degraded error
}

// annotate adds journal_degraded and a warning to a result when the
// journal could not be written.
func (j journaled) annotate(res Result) Result {
	if j.degraded == nil {
		return res
	}
	res["journal_degraded"] = true
	warn := map[string]any{
		"reason": "journal_append_failed", "detail": j.degraded.Error(),
		"hint": "the write landed; its journal row is kept with the lock and appended, marked recovered, once the journal can be written",
	}
	ws, _ := res["warnings"].([]map[string]any)
	res["warnings"] = append(ws, warn)
	return res
}

// commit writes data to rel in r atomically (writeAtomic). With a row, the
// row is recorded in h before the commit point and appended to the journal
// after it: a journal failure then degrades the result instead of failing a
// write that landed.
func (w *Workspace) commit(ctx context.Context, h *lockHandle, r *os.Root, rel string, data []byte, o writeOpts, row map[string]any) (journaled, error) {
	var line []byte
	if row != nil {
		var err error
		if line, err = recordLine(row); err != nil {
			return journaled{}, err
		}
		o.beforeCommit = func() error { return h.record(line) }
	}
	committed, err := w.writeAtomic(ctx, r, rel, data, o)
	if err != nil {
		if committed {
			h.keep() // renamed, then a directory fsync failed: let recovery decide
		} else {
			h.settle()
		}
		return journaled{}, err
	}
	if row == nil {
		return journaled{}, nil
	}
	return w.journalCommitted(ctx, h, row, line), nil
}

// journalCommitted appends the row of a write that has passed its commit
// point (so ctx no longer cancels it) and clears its lock record.
func (w *Workspace) journalCommitted(ctx context.Context, h *lockHandle, row map[string]any, line []byte) journaled {
	j := journaled{}
	j.id, _ = row["journal_id"].(string)
	j.ts, _ = row["ts"].(string)
	if err := w.appendJournalLine(context.WithoutCancel(ctx), line, ""); err != nil {
		w.log.Warn("durable: write landed but its journal row could not be appended", "path", row["path"], "err", err)
		h.keep()
		j.degraded = err
		return j
	}
	h.settle()
	return j
}

// appendJournalLine appends one row under the journal lock and fsyncs it
// before returning, so a reply never names a write the journal could lose.
// With skipID, nothing is appended when the journal already holds a row
// with that journal_id (a recovered write whose writer got that far). A
// journal that does not end in a newline (a torn or hand-written last line)
// is terminated first.
func (w *Workspace) appendJournalLine(ctx context.Context, line []byte, skipID string) error {
	_, err := w.appendJournalRow(ctx, line, skipID)
	return err
}

// appendJournalRow is appendJournalLine reporting whether it appended.
func (w *Workspace) appendJournalRow(ctx context.Context, line []byte, skipID string) (bool, error) {
	h, err := w.acquire(ctx, lockJournal, true, true)
	if err != nil {
		return false, err
	}
	defer h.unlock()
	disp := w.statePath(journalFile)
	st, err := w.stateRoot(true)
	if err != nil {
		return false, err
	}
	defer st.Close()
	f, created, err := openStateFile(st, journalFile, oRDWR|oAppend, true)
	if err != nil {
		return false, fsError(err, disp)
	}
	defer f.Close()
	if skipID != "" {
		fi, err := f.Stat()
		if err != nil {
			return false, fsError(err, disp)
		}
		data, err := readAllFrom(f, fi.Size(), -1)
		if err != nil {
			return false, fsError(err, disp)
		}
		if bytes.Contains(data, []byte(`"journal_id":"`+skipID+`"`)) {
			return false, nil
		}
	}
	prefix, err := w.terminateJournal(f)
	if err != nil {
		return false, fsError(err, disp)
	}
	buf := make([]byte, 0, len(prefix)+len(line)+1)
	buf = append(append(append(buf, prefix...), line...), '\n')
	if _, err := f.Write(buf); err != nil {
		return false, fsError(err, disp)
	}
	if err := f.Sync(); err != nil {
		return false, fsError(err, disp)
	}
	if err := f.Close(); err != nil {
		return false, fsError(err, disp)
	}
	if created {
		if err := syncDir(st, "."); err != nil {
			return false, fsError(err, disp)
		}
	}
	return true, nil
}

// openStateFile opens rel in the state root without following a symlink in
// its last component, creating it when create (created reports that), and
// refuses anything but a singly linked regular file.
func openStateFile(st *os.Root, rel string, flags int, create bool) (f *os.File, created bool, err error) {
	dir, base := splitRel(rel)
	d, err := st.Open(dir)
	if err != nil {
		return nil, false, err
	}
	defer d.Close()
	for range 10 {
		f, err = openAt(d, base, flags, 0)
		if errors.Is(err, fs.ErrNotExist) && create {
			f, err = openAt(d, base, flags|oCreate, 0o644)
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			created = err == nil
		}
		break
	}
	if err != nil {
		return nil, false, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkRegular(fi, rel)
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	return f, created, nil
}

// maxTornLine bounds how much of an unterminated last line
// terminateJournal examines.
const maxTornLine = 1 << 20

// terminateJournal makes the journal end at a line boundary before an
// append; the journal lock is held. An unterminated last line that parses
// (written by hand) gets its newline (returned as a prefix for the append);
// one that does not is a torn append of a crashed writer and is cut off, so
// it can never become a corrupt line in the middle of the journal.
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
	data, err := w.readState(st, journalFile)
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
