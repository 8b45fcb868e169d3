package durable

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"regexp"
	"sort"
	"strconv"
)

// namePattern is Resilient Write's pattern for chunk sessions and
// checkpoint names.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_\-]{1,64}$`)

// writeState writes rel inside the state root atomically under the lock h;
// mode names the journal mode ("" to skip the journal, as for manifests and
// indexes).
func (w *Workspace) writeState(ctx context.Context, h *lockHandle, st *os.Root, rel string, data []byte, noClobber bool, mode string) (string, journaled, error) {
	disp := w.statePath(rel)
	sha := sha256Hex(data)
	var row map[string]any
	if mode != "" {
		row = w.newRow(disp, sha, int64(len(data)), mode, nil)
	}
	j, err := w.commit(ctx, h, st, rel, data, writeOpts{noClobber: noClobber, disp: disp, sha: sha}, row)
	return sha, j, err
}

// appendStateLine appends one line to a state file and fsyncs it; the
// file's lock is held.
func appendStateLine(st *os.Root, rel string, line []byte, disp string) error {
	f, created, err := openStateFile(st, rel, oRDWR|oAppend, true)
	if err != nil {
		return fsError(err, disp)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte("\n"), line...)
		}
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fsError(err, disp)
	}
	if err := f.Sync(); err != nil {
		return fsError(err, disp)
	}
	if err := f.Close(); err != nil {
		return fsError(err, disp)
	}
	if created {
		dir, _ := splitRel(rel)
		if err := syncDir(st, dir); err != nil {
			return fsError(err, disp)
		}
	}
	return nil
}

// listDir returns the names in dir of st, sorted; a missing dir is empty.
func listDir(st *os.Root, dir string) ([]fs.DirEntry, bool, error) {
	f, err := st.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, true, err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, true, nil
}

// jsonInt returns v as an int if it is an integral JSON number.
func jsonInt(v any) (int, bool) {
	switch n := v.(type) {
	case json.Number:
		if i, err := strconv.Atoi(n.String()); err == nil {
			return i, true
		}
		if f, err := n.Float64(); err == nil && f == float64(int(f)) {
			return int(f), true
		}
	case float64:
		if n == float64(int(n)) {
			return int(n), true
		}
	case int:
		return n, true
	}
	return 0, false
}
