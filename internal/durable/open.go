package durable

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// Errors of the platform layer.
var (
	// ErrPlatform is returned by Open where the package cannot keep its
	// promises (see sys_nounix.go).
	ErrPlatform = errors.New("durable: needs flock(2) and O_NOFOLLOW opens (unix); this platform is not supported")

	errNoReplaceUnsupported = errors.New("durable: renameat2 RENAME_NOREPLACE unsupported")
	errLockBusy             = errors.New("durable: lock held by another open file")
)

// splitRel splits a slash path relative to a root into its directory ("."
// for the root) and base name.
func splitRel(rel string) (dir, base string) {
	dir, base = path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	return dir, base
}

// openChecked opens rel in r for reading without following a symlink in
// its last component, and checks the descriptor it opened — not the path,
// which can be swapped between a check and a read — before anything is
// read from it: a regular file with exactly one link. Directories on the
// way are opened through r, so they cannot lead out of it. It is how every
// tool reads file content; a hard link to a file outside the root (or a
// symlink, FIFO or device swapped in) is refused, never read. Errors are
// raw OS errors (so errors.Is(err, fs.ErrNotExist) works) or *Error
// refusals; callers wrap them with fsError.
func openChecked(r *os.Root, rel, disp string) (*os.File, fs.FileInfo, error) {
	dir, base := splitRel(rel)
	if base == "" || base == "." {
		return nil, nil, checkRegularMode(fs.ModeDir, disp)
	}
	d, err := r.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	f, err := openAt(d, base, oRead, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := checkRegular(fi, disp); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// errTooLarge marks a file larger than a reader's limit.
var errTooLarge = errors.New("durable: file too large")

// readChecked reads rel in r through openChecked, refusing files larger
// than limit bytes with errTooLarge (limit < 0: no limit). It returns the
// descriptor's FileInfo.
func readChecked(r *os.Root, rel, disp string, limit int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := openChecked(r, rel, disp)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	data, err := readAllFrom(f, fi.Size(), limit)
	return data, fi, err
}

// readAllFrom reads f to its end, expecting about size bytes, failing with
// errTooLarge past limit (limit < 0: none).
func readAllFrom(f *os.File, size, limit int64) ([]byte, error) {
	if limit >= 0 && size > limit {
		return nil, errTooLarge
	}
	var src io.Reader = f
	if limit >= 0 {
		src = io.LimitReader(f, limit+1)
	}
	buf := make([]byte, 0, size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if limit >= 0 && int64(len(buf)) > limit {
		return nil, errTooLarge
	}
	return buf, nil
}

// readState reads a state file (journal, manifests, parts, checkpoints,
// scratch) with the same checks as user files, so a hard link planted in
// the state directory cannot feed outside content into a tool result.
func (w *Workspace) readState(st *os.Root, rel string) ([]byte, error) {
	data, _, err := readChecked(st, rel, w.statePath(rel), -1)
	return data, err
}

// checkRegularMode refuses a mode that is not a regular file.
func checkRegularMode(m fs.FileMode, p string) error {
	switch {
	case m.IsDir():
		return newErr(KindPolicyViolation, ReasonUnknown, ActionAbort, map[string]any{"path": p, "reason": "is_a_directory", "errno": 21, "strerror": "is a directory"})
	case m&fs.ModeSymlink != 0:
		return policyErr(ReasonPermission, "symlink_in_path", map[string]any{"path": p})
	case !m.IsRegular():
		return policyErr(ReasonUnknown, "not_a_regular_file", map[string]any{"path": p})
	}
	return nil
}

// checkRegular refuses directories, symlinks, devices and hard-linked files.
func checkRegular(fi fs.FileInfo, p string) error {
	if err := checkRegularMode(fi.Mode(), p); err != nil {
		return err
	}
	if n := linkCount(fi); n > 1 {
		return policyErr(ReasonPermission, "hard_link_refused", map[string]any{"path": p, "links": n})
	}
	return nil
}
