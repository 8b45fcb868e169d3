package durable

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Bounds of rw.list.
const (
	listMaxDepth   = 20
	listDefaultMax = 1000
	listHardMax    = 10000
)

// ListParams are rw.list's arguments.
type ListParams struct {
	Path       string // default "."
	Depth      *int   // 1 = direct children (default; with a glob: unlimited)
	Glob       *string
	MaxEntries *int
}

// List lists a directory (a tree down to Depth), optionally filtered by a
// glob on the listed-relative path ("*", "?", "[…]", "{a,b}" within one
// component, "**" for any number of components). The state directory and .git
// contents are never listed. Symlinks are reported, not followed.
func (w *Workspace) List(ctx context.Context, p ListParams) (Result, error) {
	if err := w.allow("rw.list", ""); err != nil {
		return nil, err
	}
	dir := p.Path
	if dir == "" {
		dir = "."
	}
	t, err := w.resolve(dir)
	if err != nil {
		return nil, err
	}
	depth := 1
	if p.Glob != nil {
		depth = listMaxDepth
	}
	if p.Depth != nil {
		depth = *p.Depth
	}
	if depth < 1 || depth > listMaxDepth {
		return nil, encodingErr("depth_must_be_in_1..20", map[string]any{"depth": depth})
	}
	limit := listDefaultMax
	if p.MaxEntries != nil {
		limit = *p.MaxEntries
	}
	if limit < 1 || limit > listHardMax {
		return nil, encodingErr("max_entries_must_be_in_1..10000", map[string]any{"max_entries": limit})
	}
	if p.Glob != nil && !validGlob(*p.Glob) {
		return nil, encodingErr("bad_glob: "+doublestar.ErrBadPattern.Error(), map[string]any{"glob": *p.Glob})
	}
	sub, err := t.root.r.OpenRoot(t.rel)
	if err != nil {
		return nil, fsError(err, dir)
	}
	defer sub.Close()
	entries := []map[string]any{}
	truncated := false
	err = fs.WalkDir(sub.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			if rel == "." {
				return err
			}
			return nil
		}
		if rel == "." {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		full := path.Join(t.rel, rel)
		if t.root == w.ws() && w.inState(full) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		skipBelow := d.IsDir() && (depthOf(rel) >= depth || d.Name() == ".git")
		if p.Glob == nil || globMatch(*p.Glob, rel) {
			if len(entries) == limit {
				truncated = true
				return fs.SkipAll
			}
			e := map[string]any{"path": joinDisp(t, rel), "type": "other"}
			if info, err := d.Info(); err == nil {
				e["type"] = fileType(info)
				if info.Mode().IsRegular() {
					e["bytes"] = info.Size()
				}
			}
			entries = append(entries, e)
		}
		if skipBelow {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fsError(err, dir)
	}
	return Result{"ok": true, "path": t.disp, "entries": entries, "truncated": truncated}, nil
}

// depthOf is the number of components of a slash path ("a/b" → 2).
func depthOf(rel string) int { return strings.Count(rel, "/") + 1 }

// joinDisp names rel (relative to t) for results.
func joinDisp(t target, rel string) string {
	if t.disp == "." {
		return rel
	}
	return t.disp + "/" + rel
}

// globMatch matches a slash path against a glob: "*", "?", "[…]" and
// "{a,b}" within a component, "**" for any number of components. It is
// doublestar's matcher, which backtracks to at most one "**" at a time, so
// an agent's glob costs time linear in the pattern times the path however
// many "**" it has.
func globMatch(glob, p string) bool {
	return doublestar.MatchUnvalidated(glob, p)
}

// validGlob reports whether glob is well formed.
func validGlob(glob string) bool { return doublestar.ValidatePattern(glob) }

// MkdirParams are rw.mkdir's arguments.
type MkdirParams struct {
	Path    string
	Parents *bool // default true
}

// Mkdir creates a directory (and its parents, unless Parents is false),
// fsyncing each new entry's parent. An existing directory is not an error.
func (w *Workspace) Mkdir(ctx context.Context, p MkdirParams) (Result, error) {
	const tool = "rw.mkdir"
	if err := w.allow(tool, ""); err != nil {
		return nil, err
	}
	t, err := w.resolve(p.Path)
	if err != nil {
		return nil, err
	}
	if err := w.allow(tool, t.disp); err != nil {
		return nil, err
	}
	fi, err := t.root.r.Lstat(t.rel)
	if err == nil {
		if fi.IsDir() {
			return Result{"ok": true, "path": t.disp, "created": false}, nil
		}
		return nil, newErr(KindPolicyViolation, ReasonUnknown, ActionAbort, map[string]any{"path": p.Path, "reason": "exists_not_a_directory"})
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fsError(err, p.Path)
	}
	if p.Parents != nil && !*p.Parents {
		parent := path.Dir(t.rel)
		if fi, err := t.root.r.Stat(parent); err != nil || !fi.IsDir() {
			return nil, staleErr(ActionAbort, "parent_missing", map[string]any{"path": p.Path})
		}
	}
	if err := ensureDir(t.root.r, t.rel, p.Path); err != nil {
		return nil, err
	}
	return Result{"ok": true, "path": t.disp, "created": true}, nil
}

// MoveParams are rw.move's arguments.
type MoveParams struct {
	From string
	To   string
	// Overwrite allows replacing an existing file at To; without it a move
	// never replaces anything, even a file created concurrently.
	Overwrite bool
	// ExpectedPrevSHA256 guards the replaced destination ("" = must not
	// exist).
	ExpectedPrevSHA256 *string
}

// Move renames a file or directory within one root and journals it (mode
// "move", with "from"). Both paths are checked against the write scope.
func (w *Workspace) Move(ctx context.Context, p MoveParams) (Result, error) {
	const tool = "rw.move"
	if err := w.allow(tool, ""); err != nil {
		return nil, err
	}
	from, err := w.resolve(p.From)
	if err != nil {
		return nil, err
	}
	to, err := w.resolve(p.To)
	if err != nil {
		return nil, err
	}
	for _, t := range []target{from, to} {
		if t.rel == "." {
			return nil, policyErr(ReasonPermission, "cannot_move_root", map[string]any{"path": t.raw})
		}
		if err := w.allow(tool, t.disp); err != nil {
			return nil, err
		}
	}
	if from.root != to.root {
		return nil, policyErr(ReasonPermission, "cross_root_move", map[string]any{"from": p.From, "to": p.To})
	}
	if from.rel == to.rel {
		return nil, encodingErr("same_path", map[string]any{"from": p.From, "to": p.To})
	}
	if to.rel == from.rel || strings.HasPrefix(to.rel, from.rel+"/") {
		return nil, encodingErr("destination_inside_source", map[string]any{"from": p.From, "to": p.To})
	}
	hs, err := w.lockAll(ctx, lockName(classPath, from.lockKey()), lockName(classPath, to.lockKey()))
	if err != nil {
		return nil, err
	}
	defer unlockAll(hs)
	h := hs[0]
	r := from.root.r
	sfi, err := r.Lstat(from.rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, staleErr(ActionAbort, "not_found", map[string]any{"path": p.From})
	}
	if err != nil {
		return nil, fsError(err, p.From)
	}
	// A file is moved under the same rules as a read: opened once, checked
	// on the descriptor (one link, regular), and hashed from it.
	sha, size := "", int64(0)
	var moved fs.FileInfo
	if !sfi.IsDir() {
		data, dfi, err := readChecked(r, from.rel, p.From, readMaxFile)
		switch {
		case errors.Is(err, errTooLarge):
			moved, size = sfi, sfi.Size()
		case err != nil:
			return nil, fsError(err, p.From)
		default:
			moved, sha, size = dfi, sha256Hex(data), int64(len(data))
		}
	}
	cur := ""
	dfi, err := r.Lstat(to.rel)
	destExists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fsError(err, p.To)
	}
	if destExists {
		if err := checkRegular(dfi, p.To); err != nil {
			return nil, err
		}
		data, _, err := w.readExisting(to)
		if err != nil {
			return nil, err
		}
		cur = sha256Hex(data)
		if !p.Overwrite {
			return nil, staleErr(ActionAskUser, "destination_exists", map[string]any{"path": p.To, "existing_sha256": cur})
		}
	}
	if p.ExpectedPrevSHA256 != nil && *p.ExpectedPrevSHA256 != cur {
		return nil, staleErr(ActionAskUser, "", map[string]any{"path": p.To, "expected_prev_sha256": *p.ExpectedPrevSHA256, "actual_prev_sha256": cur})
	}
	toDir, toBase := splitRel(to.rel)
	fromDir, fromBase := splitRel(from.rel)
	if err := ensureDir(r, toDir, p.To); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fd, err := r.Open(fromDir)
	if err != nil {
		return nil, fsError(err, p.From)
	}
	defer fd.Close()
	td, err := r.Open(toDir)
	if err != nil {
		return nil, fsError(err, p.To)
	}
	defer td.Close()
	row := w.newRow(to.disp, sha, size, "move", map[string]any{"from": from.disp})
	line, err := recordLine(row)
	if err == nil {
		err = h.record(line)
	}
	if err != nil {
		return nil, fsError(err, p.To)
	}
	if p.Overwrite {
		err = renameAt(fd, fromBase, td, toBase)
	} else {
		err = renameNoReplace(fd, fromBase, td, toBase)
		if errors.Is(err, errNoReplaceUnsupported) {
			if err = r.Link(from.rel, to.rel); err == nil {
				err = r.Remove(from.rel)
			}
		}
	}
	if err != nil {
		h.settle()
		if errors.Is(err, fs.ErrExist) && !p.Overwrite {
			return nil, staleErr(ActionAskUser, "destination_exists", map[string]any{"path": p.To})
		}
		return nil, fsError(err, p.To)
	}
	for _, d := range []*os.File{fd, td} {
		if err := d.Sync(); err != nil {
			h.keep()
			return nil, corruptErr(ReasonUnknown, "dir_fsync_failed", map[string]any{"path": p.To, "detail": err.Error()})
		}
	}
	if moved != nil {
		// The source could have been swapped between the check and the
		// rename; then what moved is not what was hashed, and its hash is
		// not ours to report.
		if afi, err := r.Lstat(to.rel); err != nil || !os.SameFile(moved, afi) {
			row["sha256"], sha = "", ""
			if line, err = recordLine(row); err != nil {
				return nil, err
			}
		}
	}
	j := w.journalCommitted(ctx, h, row, line)
	return j.annotate(Result{
		"ok": true, "from": from.disp, "to": to.disp, "type": fileType(sfi), "sha256": sha, "bytes": size,
		"overwrote": destExists, "journal_id": j.id, "wrote_at": j.ts,
	}), nil
}
