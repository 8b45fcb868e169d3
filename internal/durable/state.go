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

// writeState writes rel inside the state root atomically; journal names the
// journal mode ("" to skip the journal, as for manifests and indexes).
func (w *Workspace) writeState(ctx context.Context, st *os.Root, rel string, data []byte, noClobber bool, journal string) (sha, id, ts string, err error) {
	disp := w.statePath(rel)
	sha, err = w.writeAtomic(ctx, st, rel, data, writeOpts{noClobber: noClobber, disp: disp})
	if err != nil {
		return "", "", "", err
	}
	if journal == "" {
		return sha, "", "", nil
	}
	id, ts, err = w.appendJournal(disp, sha, int64(len(data)), journal, nil)
	return sha, id, ts, err
}

// appendStateLine appends one line to a state file and fsyncs it.
func appendStateLine(st *os.Root, rel string, line []byte, disp string) error {
	_, statErr := st.Lstat(rel)
	f, err := st.OpenFile(rel, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
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
	if errors.Is(statErr, fs.ErrNotExist) {
		dir := "."
		if i := lastSlash(rel); i >= 0 {
			dir = rel[:i]
		}
		if err := syncDir(st, dir); err != nil {
			return fsError(err, disp)
		}
	}
	return nil
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
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
		i, err := strconv.Atoi(n.String())
		return i, err == nil
	case float64:
		if n == float64(int(n)) {
			return int(n), true
		}
	case int:
		return n, true
	}
	return 0, false
}
