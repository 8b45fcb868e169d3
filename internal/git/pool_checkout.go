package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// errIneligible: the pool must leave this checkout to git (the message says
// why).
var errIneligible = errors.New("git: checkout needs git")

// checkoutState is what a pooled worktree holds: the index the pool wrote,
// with the lstat of every file it wrote.
type checkoutState struct {
	commit, tree string
	entries      []indexEntry // sorted by path
	cone         *cone
	// missing are entries whose file a release removed (its user changed
	// it) and the next acquisition writes again if it keeps them.
	missing map[string]bool
	// mark is the inode change time of the .git file, rewritten last when
	// the worktree was handed out: a file whose change time is not before
	// it may have been changed within the same clock tick without its
	// timestamps showing it, so a release compares its content.
	mark changeTime
}

// checkoutPlan is what moving a worktree to a new commit takes.
type checkoutPlan struct {
	st     *checkoutState
	remove []string // files to delete
	prune  []string // directories that may be left empty, to remove if no entry needs them
	write  []int    // indices of st.entries whose files to write
	// inPlace are the writes over a regular file of the pool's that stays
	// one, with its lstat as the pool recorded it (and the last release
	// checked): its bytes are overwritten rather than the file replaced.
	inPlace     map[int]statData
	old         *checkoutState
	coneChanged bool
}

// plan computes the move from old to commit's tree in cone cn without
// touching the worktree; errIneligible if the pool may not write the tree
// itself.
func (p *WorktreePool) plan(ctx context.Context, old *checkoutState, commit, tree string, cn *cone) (*checkoutPlan, error) {
	var changes []change
	if old.tree != tree {
		var err error
		if changes, err = p.diffTrees(ctx, old.tree, tree); err != nil {
			return nil, err
		}
	}
	var attrs []string
	for _, c := range changes {
		if !c.hasNew {
			continue
		}
		if r := pathReason(c.path, c.new.mode); r != "" {
			return nil, fmt.Errorf("%w: %s", errIneligible, r)
		}
		if path.Base(c.path) == ".gitattributes" && c.new.mode != 0o120000 {
			attrs = append(attrs, c.new.oid)
		}
	}
	if len(attrs) > 0 {
		obs, err := p.objects.get(ctx, hexAll(attrs)...)
		if err != nil {
			return nil, err
		}
		for k, ob := range obs {
			if r := p.conv.blobReason(attrs[k], ob.data); r != "" {
				return nil, fmt.Errorf("%w: .gitattributes %s", errIneligible, r)
			}
		}
	}
	slices.SortFunc(changes, func(a, b change) int { return strings.Compare(a.path, b.path) })

	pl := &checkoutPlan{old: old, coneChanged: !old.cone.equal(cn), inPlace: map[int]statData{}}
	st := &checkoutState{commit: commit, tree: tree, cone: cn, missing: map[string]bool{}}
	st.entries = make([]indexEntry, 0, len(old.entries)+len(changes))
	present := func(e indexEntry) bool { return !e.skip && !old.missing[e.path] }
	leave := func(e indexEntry) {
		if present(e) {
			pl.remove = append(pl.remove, e.path)
		}
		if !e.skip {
			pl.prune = append(pl.prune, parentDir(e.path))
		}
	}
	add := func(path string, te treeEntry) {
		e := indexEntry{path: path, mode: te.mode, oid: te.oid, skip: !cn.includes(path)}
		if !e.skip {
			pl.write = append(pl.write, len(st.entries))
		}
		st.entries = append(st.entries, e)
	}
	i, j := 0, 0
	for i < len(old.entries) || j < len(changes) {
		switch {
		case j < len(changes) && (i == len(old.entries) || changes[j].path < old.entries[i].path):
			c := changes[j]
			if c.hasOld || !c.hasNew {
				return nil, fmt.Errorf("git: pooled worktree out of step with its tree at %q", c.path)
			}
			add(c.path, c.new)
			j++
		case j < len(changes) && changes[j].path == old.entries[i].path:
			c, e := changes[j], old.entries[i]
			if !c.hasOld || c.old.oid != e.oid || c.old.mode != e.mode {
				return nil, fmt.Errorf("git: pooled worktree out of step with its tree at %q", c.path)
			}
			switch {
			case c.hasNew && present(e) && isRegular(e.mode) && isRegular(c.new.mode) && cn.includes(c.path):
				// Rewritten in place: no inode to free and allocate. The
				// file is the pool's own (the release checked its lstat,
				// so no link to it was made since).
				pl.inPlace[len(st.entries)] = e.st
				add(c.path, c.new)
			case c.hasNew:
				if present(e) {
					pl.remove = append(pl.remove, e.path)
				}
				if !e.skip {
					pl.prune = append(pl.prune, parentDir(e.path)) // in case the new one is outside the cone
				}
				add(c.path, c.new)
			default:
				leave(e)
			}
			i++
			j++
		default:
			e := old.entries[i]
			skip := e.skip
			if pl.coneChanged {
				skip = !cn.includes(e.path)
			}
			switch {
			case skip && !e.skip:
				leave(e)
				e.skip, e.st = true, statData{}
			case !skip && (e.skip || old.missing[e.path]):
				e.skip, e.st = false, statData{}
				pl.write = append(pl.write, len(st.entries))
			}
			st.entries = append(st.entries, e)
			i++
		}
	}
	pl.st = st
	return pl, nil
}

// needsDir reports whether a file of the new state lies under dir.
func (pl *checkoutPlan) needsDir(dir string) bool {
	if dir == "" {
		return true
	}
	es := pl.st.entries
	k := sort.Search(len(es), func(i int) bool { return es[i].path >= dir+"/" })
	for ; k < len(es) && strings.HasPrefix(es[k].path, dir+"/"); k++ {
		if !es[k].skip {
			return true
		}
	}
	return false
}

// blobBatch bounds how many blobs are held in memory at once.
const blobBatch = 256

// apply carries a plan out on the slot's worktree, checking out branch (which
// the caller created) or detaching HEAD. On error the worktree is in no
// known state; the caller removes it.
func (p *WorktreePool) apply(ctx context.Context, s *slot, pl *checkoutPlan, branch string) error {
	st := pl.st
	t0 := time.Now()
	step := func(name string) {
		if p.trace != nil {
			p.trace(name, time.Since(t0))
			t0 = time.Now()
		}
	}
	defer step("head")
	for _, rel := range pl.remove {
		if err := removeFile(filepath.Join(s.path, rel)); err != nil {
			return err
		}
	}
	if err := pl.pruneDirs(s.path); err != nil {
		return err
	}
	step("remove")
	made := map[string]bool{}
	for start := 0; start < len(pl.write); start += blobBatch {
		idx := pl.write[start:min(start+blobBatch, len(pl.write))]
		oids := make([]string, len(idx))
		for k, i := range idx {
			oids[k] = st.entries[i].oid
		}
		obs, err := p.objects.get(ctx, hexAll(oids)...)
		if err != nil {
			return err
		}
		for k, i := range idx {
			e := &st.entries[i]
			if obs[k].typ != "blob" {
				return fmt.Errorf("git: %x at %q is a %s, not a blob", e.oid, e.path, obs[k].typ)
			}
			if old, ok := pl.inPlace[i]; ok {
				e.st, err = p.overwrite(s.path, e, old, obs[k].data)
			} else {
				e.st, err = p.writeEntry(s.path, e, obs[k].data, made)
			}
			if err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if pl.coneChanged || pl.old.tree == "" {
		if err := p.writeSparseConfig(s.admin, st.cone); err != nil {
			return err
		}
	}
	step("write")
	index, err := encodeIndex(st.entries, p.hashLen)
	if err != nil {
		return err
	}
	step("encode")
	if err := writeInPlace(filepath.Join(s.admin, "index"), index); err != nil {
		return err
	}
	step("index")
	head := st.commit + "\n"
	if branch != "" {
		head = "ref: refs/heads/" + branch + "\n"
	}
	if err := writeInPlace(filepath.Join(s.admin, "HEAD"), []byte(head)); err != nil {
		return err
	}
	mark, err := p.writeGitlink(s)
	if err != nil {
		return err
	}
	st.mark, s.st = mark, st
	return nil
}

// pruneDirs removes the directories the plan may have emptied that no file
// of the new state needs, deepest first. A directory that is not empty
// then holds something the pool did not account for: an error.
func (pl *checkoutPlan) pruneDirs(root string) error {
	dirs := map[string]bool{}
	for _, d := range pl.prune {
		for ; d != "" && !dirs[d]; d = parentDir(d) {
			dirs[d] = true
		}
	}
	list := make([]string, 0, len(dirs))
	for d := range dirs {
		if !pl.needsDir(d) {
			list = append(list, d)
		}
	}
	slices.SortFunc(list, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range list {
		err := os.Remove(filepath.Join(root, d))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("git: pooled worktree: removing directory %s: %w", d, err)
		}
	}
	return nil
}

// writeEntry writes one file as git's checkout does (a new inode, mode 0666
// or 0777 less the umask, a symbolic link for mode 120000) and returns its
// lstat.
func (p *WorktreePool) writeEntry(root string, e *indexEntry, data []byte, made map[string]bool) (statData, error) {
	abs := filepath.Join(root, e.path)
	if dir := parentDir(e.path); dir != "" && !made[dir] {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o777); err != nil {
			return statData{}, err
		}
		made[dir] = true
	}
	for attempt := 0; ; attempt++ {
		var fi fs.FileInfo
		var err error
		if e.mode == 0o120000 {
			if err = os.Symlink(string(data), abs); err == nil {
				fi, err = os.Lstat(abs)
			}
		} else {
			fi, err = createFile(abs, data, e.mode == 0o100755)
		}
		if errors.Is(err, fs.ErrExist) && attempt == 0 {
			if err := removeFile(abs); err != nil {
				return statData{}, err
			}
			continue
		}
		if err != nil {
			return statData{}, err
		}
		sd, ok := statOf(fi)
		if !ok {
			return statData{}, fmt.Errorf("%w: no lstat data for %s", ErrUnsupported, abs)
		}
		return sd, nil
	}
}

// overwrite replaces the content of the regular file at e.path, whose
// lstat was old, with data and gives it e's mode, keeping the inode, and
// returns its lstat.
func (p *WorktreePool) overwrite(root string, e *indexEntry, old statData, data []byte) (statData, error) {
	f, err := os.OpenFile(filepath.Join(root, e.path), os.O_WRONLY|noFollow, 0)
	if err != nil {
		return statData{}, err
	}
	defer f.Close()
	if _, err := f.WriteAt(data, 0); err != nil {
		return statData{}, err
	}
	perm := p.filePerm
	if e.mode == 0o100755 {
		perm = p.execPerm
	}
	if fs.FileMode(old.mode).Perm() != perm {
		if err := f.Chmod(perm); err != nil {
			return statData{}, err
		}
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() > int64(len(data)) {
		if err = f.Truncate(int64(len(data))); err == nil {
			fi, err = f.Stat()
		}
	}
	if err != nil {
		return statData{}, err
	}
	if !fi.Mode().IsRegular() {
		return statData{}, fmt.Errorf("git: pooled worktree: %s is no longer a regular file", e.path)
	}
	sd, ok := statOf(fi)
	if !ok {
		return statData{}, fmt.Errorf("%w: no lstat data for %s", ErrUnsupported, e.path)
	}
	return sd, f.Close()
}

func isRegular(mode uint32) bool { return mode == 0o100644 || mode == 0o100755 }

func createFile(abs string, data []byte, exec bool) (fs.FileInfo, error) {
	perm := fs.FileMode(0o666)
	if exec {
		perm = 0o777
	}
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(data)
	var fi fs.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return fi, err
}

// removeFile removes whatever is at abs (a directory with its contents);
// nothing there is not an error.
func removeFile(abs string) error {
	err := os.Remove(abs)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return forceRemove(abs)
}

// writeSparseConfig writes (or, for no cone, removes) the worktree's
// sparse-checkout configuration and patterns.
func (p *WorktreePool) writeSparseConfig(admin string, cn *cone) error {
	if cn == nil {
		if err := removeFile(filepath.Join(admin, "config.worktree")); err != nil {
			return err
		}
		return removeFile(filepath.Join(admin, "info"))
	}
	if err := os.MkdirAll(filepath.Join(admin, "info"), 0o777); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(admin, "info", "sparse-checkout"), []byte(cn.patterns()), 0o666); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(admin, "config.worktree"), []byte(sparseConfig), 0o666)
}

// writeGitlink makes sure the worktree's .git file is what git wrote and
// touches it, last: its change time is the mark a release compares files
// against.
func (p *WorktreePool) writeGitlink(s *slot) (changeTime, error) {
	link := filepath.Join(s.path, ".git")
	if b, err := os.ReadFile(link); err != nil || !bytes.Equal(b, s.gitlink) {
		if err := os.WriteFile(link, s.gitlink, 0o666); err != nil {
			return changeTime{}, err
		}
	}
	now := time.Now()
	if err := os.Chtimes(link, now, now); err != nil {
		return changeTime{}, err
	}
	fi, err := os.Lstat(link)
	if err != nil {
		return changeTime{}, err
	}
	return changeTimeOf(fi), nil
}
