package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// errExists is returned by writeAtomic when a no-clobber write finds the
// destination present; callers turn it into their own envelope.
var errExists = errors.New("durable: destination exists")

// tmpPattern matches the temp files writeAtomic creates:
// .<name>.tmp.<pid>.<12 hex>.
var tmpPattern = regexp.MustCompile(`^\..+\.tmp\.([0-9]+)\.[0-9a-f]{12}$`)

// writeOpts tune writeAtomic.
type writeOpts struct {
	noClobber       bool        // never replace an existing file (create)
	refuseHardLinks bool        // refuse to replace a file with more than one link
	perm            fs.FileMode // mode of a new file (before umask); default 0644
	disp            string      // path named in envelopes
	sha             string      // SHA-256 of data, if the caller has it
	// beforeCommit runs after the last cancellation check, just before the
	// rename; an error aborts the write (the lock protocol records the
	// journal row there).
	beforeCommit func() error
}

// sha256Hex returns the hex SHA-256 of b.
func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// tmpName returns a fresh temp name for base in the same directory.
func (w *Workspace) tmpName(base string) string {
	if len(base) > 180 {
		base = base[:180]
	}
	return "." + base + ".tmp." + strconv.Itoa(w.pid) + "." + w.randHex(6)
}

// ensureDir creates dir (relative to r) and its missing parents, fsyncing the
// parent of every directory it creates so the new entries are durable.
func ensureDir(r *os.Root, dir string, disp string) error {
	if dir == "." || dir == "" {
		return nil
	}
	comps := strings.Split(dir, "/")
	for i := range comps {
		prefix := strings.Join(comps[:i+1], "/")
		err := r.Mkdir(prefix, 0o755)
		if err == nil {
			parent := "."
			if i > 0 {
				parent = strings.Join(comps[:i], "/")
			}
			if err := syncDir(r, parent); err != nil {
				return fsError(err, disp)
			}
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			e := fsError(err, disp)
			if e.Kind == KindPolicyViolation && e.Reason == ReasonPermission {
				if _, has := e.Context["reason"]; !has {
					e.Context["reason"] = "mkdir_failed: " + err.Error()
				}
			}
			return e
		}
		fi, err := r.Stat(prefix)
		if err != nil {
			return fsError(err, disp)
		}
		if !fi.IsDir() {
			return fsError(&fs.PathError{Op: "mkdir", Path: prefix, Err: syscall.ENOTDIR}, disp)
		}
	}
	return nil
}

// syncDir fsyncs the directory dir of r.
func syncDir(r *os.Root, dir string) error {
	d, err := r.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	return errors.Join(serr, cerr)
}

// writeAtomic durably replaces (or creates) rel in r with data:
//
//  1. the parent is created if needed (each new directory's parent fsynced)
//     and opened once as its own os.Root, so every later step works on that
//     directory and nothing walks the path again;
//  2. a temp file is created beside the target with O_CREAT|O_EXCL and the
//     existing file's mode (and owner, when permitted);
//  3. the bytes are written, fsynced, read back and hashed;
//  4. the context is checked: this is the last point a cancel takes effect;
//     then o.beforeCommit runs;
//  5. the temp is renamed over the target, or for noClobber renamed with
//     RENAME_NOREPLACE (link+unlink where unsupported), which fails rather
//     than replace a file created meanwhile;
//  6. the directory is fsynced.
//
// committed reports whether the rename happened (only a failed directory
// fsync returns an error after it). Any fsync or close failure fails the
// whole write and removes the temp: the data is never assumed durable after
// an error. errExists reports a noClobber conflict.
func (w *Workspace) writeAtomic(ctx context.Context, r *os.Root, rel string, data []byte, o writeOpts) (committed bool, err error) {
	if o.disp == "" {
		o.disp = rel
	}
	dir, base := splitRel(rel)
	if err := ensureDir(r, dir, o.disp); err != nil {
		return false, err
	}
	pr, err := r.OpenRoot(dir)
	if err != nil {
		return false, fsError(err, o.disp)
	}
	defer pr.Close()
	d, err := pr.Open(".")
	if err != nil {
		return false, fsError(err, o.disp)
	}
	defer d.Close()

	perm := o.perm
	if perm == 0 {
		perm = 0o644
	}
	var keepOwner *[2]int
	fi, err := pr.Lstat(base)
	exists := err == nil
	switch {
	case exists:
		switch {
		case fi.IsDir():
			return false, fsError(&fs.PathError{Op: "open", Path: rel, Err: syscall.EISDIR}, o.disp)
		case fi.Mode()&fs.ModeSymlink != 0:
			return false, policyErr(ReasonPermission, "symlink_in_path", map[string]any{"path": o.disp})
		case !fi.Mode().IsRegular():
			return false, policyErr(ReasonUnknown, "not_a_regular_file", map[string]any{"path": o.disp})
		case o.noClobber:
			return false, errExists
		case o.refuseHardLinks && linkCount(fi) > 1:
			return false, policyErr(ReasonPermission, "hard_link_refused", map[string]any{"path": o.disp, "links": linkCount(fi)})
		}
		perm = fi.Mode().Perm()
		if uid, gid, ok := owner(fi); ok && (uid != os.Geteuid() || gid != os.Getegid()) {
			keepOwner = &[2]int{uid, gid}
		}
	case !errors.Is(err, fs.ErrNotExist):
		return false, fsError(err, o.disp)
	}

	tmp := w.tmpName(base)
	f, err := pr.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return false, fsError(err, o.disp)
	}
	closed := false
	defer func() {
		if !closed {
			f.Close()
			pr.Remove(tmp)
		}
	}()
	if exists {
		if err := f.Chmod(perm); err != nil {
			return false, fsError(err, o.disp)
		}
		if keepOwner != nil {
			f.Chown(keepOwner[0], keepOwner[1]) // best effort: only root may give files away
		}
	}
	if _, err := f.Write(data); err != nil {
		return false, fsError(err, o.disp)
	}
	if err := f.Sync(); err != nil {
		return false, fsError(err, o.disp)
	}
	want := o.sha
	if want == "" {
		want = sha256Hex(data)
	}
	h := sha256.New()
	buf := make([]byte, min(len(data)+1, 64<<10))
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, int64(len(data))+1), buf); err != nil {
		return false, fsError(err, o.disp)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return false, corruptErr(ReasonUnknown, "read_back_mismatch", map[string]any{"path": o.disp, "expected_sha256": want, "actual_sha256": got, "bytes": len(data)})
	}
	closed = true
	if err := f.Close(); err != nil {
		pr.Remove(tmp)
		return false, fsError(err, o.disp)
	}
	if err := ctx.Err(); err != nil {
		pr.Remove(tmp)
		return false, err
	}
	if o.beforeCommit != nil {
		if err := o.beforeCommit(); err != nil {
			pr.Remove(tmp)
			return false, fsError(err, o.disp)
		}
	}
	// Commit point: from here on the write completes even if cancelled.
	if o.noClobber {
		err = renameNoReplace(d, tmp, d, base)
		if errors.Is(err, errNoReplaceUnsupported) {
			err = pr.Link(tmp, base)
			if err == nil {
				err = pr.Remove(tmp)
			}
		}
		if errors.Is(err, fs.ErrExist) {
			pr.Remove(tmp)
			return false, errExists
		}
	} else {
		err = pr.Rename(tmp, base)
	}
	if err != nil {
		pr.Remove(tmp)
		return false, fsError(err, o.disp)
	}
	if err := d.Sync(); err != nil {
		return true, corruptErr(ReasonUnknown, "dir_fsync_failed", map[string]any{"path": o.disp, "detail": err.Error()})
	}
	return true, nil
}
