package git

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// adminKeep are the files of a worktree's administrative directory that a
// fresh `git worktree add` (and a sparse checkout) has; a release removes
// everything else its user left there: merge, rebase, cherry-pick and
// bisect state, ORIG_HEAD, lock files, per-worktree refs, a lock reason.
var adminKeep = map[string]bool{"HEAD": true, "commondir": true, "gitdir": true, "index": true, "logs": true, "config.worktree": true, "info": true}

// scrub undoes what the user of a released worktree did to it, so that the
// next acquisition need only move it to its commit:
//
//   - a file the pool wrote whose lstat differs from what the pool recorded
//     (content, mode, inode, timestamps), or whose timestamps cannot tell
//     and whose content differs, is removed and marked missing, to be
//     written again;
//   - a file or directory the pool did not write is removed, ignored or
//     not, and so is a symbolic link the user put anywhere;
//   - directories get git's permissions back, and so does the .git file;
//   - the administrative directory loses all but what git made, and HEAD
//     is detached at the commit, freeing the user's branch.
//
// It returns how many files it restored (removed to be written again) and
// how many untracked entries it removed.
func (p *WorktreePool) scrub(s *slot) (restored, cleaned int, err error) {
	st := s.st
	fi, err := os.Lstat(s.path)
	if err != nil {
		return 0, 0, err
	}
	if !fi.IsDir() {
		return 0, 0, fmt.Errorf("git: pooled worktree %s is no longer a directory", s.path)
	}
	if fi.Mode().Perm() != p.dirPerm {
		if err := os.Chmod(s.path, p.dirPerm); err != nil {
			return 0, 0, err
		}
	}
	if err := p.sanitizeAdmin(s); err != nil {
		return 0, 0, err
	}
	link := filepath.Join(s.path, ".git")
	if fi, err := os.Lstat(link); err == nil && !fi.Mode().IsRegular() {
		if err := forceRemove(link); err != nil {
			return 0, 0, err
		}
	} else if err == nil && fi.Mode().Perm() != p.filePerm {
		if err := os.Chmod(link, p.filePerm); err != nil {
			return 0, 0, err
		}
	}

	w := &walker{p: p, s: s, st: st, dirs: map[string]bool{}, seen: make([]bool, len(st.entries))}
	for _, e := range st.entries {
		if e.skip {
			continue
		}
		for d := parentDir(e.path); d != "" && !w.dirs[d]; d = parentDir(d) {
			w.dirs[d] = true
		}
	}
	if err := w.walk(""); err != nil {
		return 0, 0, err
	}
	for i, e := range st.entries {
		if !e.skip && !w.seen[i] && !st.missing[e.path] {
			st.missing[e.path] = true
			w.restored++
		}
	}
	if err := writeLocked(s.admin, "HEAD", []byte(st.commit+"\n")); err != nil {
		return 0, 0, err
	}
	return w.restored, w.cleaned, nil
}

// sanitizeAdmin restores the administrative directory to what git and the
// pool made.
func (p *WorktreePool) sanitizeAdmin(s *slot) error {
	ents, err := os.ReadDir(s.admin)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !adminKeep[e.Name()] {
			if err := forceRemove(filepath.Join(s.admin, e.Name())); err != nil {
				return err
			}
		}
	}
	if fi, err := os.Lstat(filepath.Join(s.admin, "index")); err == nil && !fi.Mode().IsRegular() {
		if err := forceRemove(filepath.Join(s.admin, "index")); err != nil {
			return err
		}
	}
	if ents, err := os.ReadDir(filepath.Join(s.admin, "logs")); err == nil {
		for _, e := range ents {
			if e.Name() != "HEAD" {
				if err := forceRemove(filepath.Join(s.admin, "logs", e.Name())); err != nil {
					return err
				}
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(s.admin, "gitdir")); err != nil || !bytes.Equal(b, s.gitdir) {
		if err := writeLocked(s.admin, "gitdir", s.gitdir); err != nil {
			return err
		}
	}
	if b, err := os.ReadFile(filepath.Join(s.admin, "commondir")); err != nil || !bytes.Equal(b, s.commondir) {
		if err := writeLocked(s.admin, "commondir", s.commondir); err != nil {
			return err
		}
	}
	return p.writeSparseConfig(s.admin, s.st.cone)
}

// walker visits a released worktree.
type walker struct {
	p    *WorktreePool
	s    *slot
	st   *checkoutState
	dirs map[string]bool // directories the pool's files need
	seen []bool          // st.entries found on disk

	restored, cleaned int
}

func (w *walker) walk(rel string) error {
	abs := filepath.Join(w.s.path, rel)
	ents, err := os.ReadDir(abs)
	if err != nil {
		return err
	}
	for _, d := range ents {
		name := d.Name()
		if rel == "" && name == ".git" {
			continue
		}
		p := name
		if rel != "" {
			p = rel + "/" + name
		}
		full := filepath.Join(abs, name)
		if d.IsDir() {
			if !w.dirs[p] {
				w.cleaned++
				if err := forceRemove(full); err != nil {
					return err
				}
				continue
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if fi.Mode().Perm() != w.p.dirPerm {
				if err := os.Chmod(full, w.p.dirPerm); err != nil {
					return err
				}
			}
			if err := w.walk(p); err != nil {
				return err
			}
			continue
		}
		es := w.st.entries
		i := sort.Search(len(es), func(k int) bool { return es[k].path >= p })
		if i == len(es) || es[i].path != p || es[i].skip {
			w.cleaned++
			if err := removeFile(full); err != nil {
				return err
			}
			continue
		}
		w.seen[i] = true
		if w.st.missing[p] { // removed by an earlier release and made again
			if err := removeFile(full); err != nil {
				return err
			}
			continue
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		sd, _ := statOf(fi)
		if sd == es[i].st && (changeTimeOf(fi).before(w.st.mark) || w.sameContent(full, es[i])) {
			continue
		}
		if err := removeFile(full); err != nil {
			return err
		}
		w.st.missing[p] = true
		w.restored++
	}
	return nil
}

// sameContent reports whether the file at abs holds entry e's blob (its
// type and mode having been compared already).
func (w *walker) sameContent(abs string, e indexEntry) bool {
	var data []byte
	if e.mode == 0o120000 {
		t, err := os.Readlink(abs)
		if err != nil {
			return false
		}
		data = []byte(t)
	} else {
		b, err := os.ReadFile(abs)
		if err != nil {
			return false
		}
		data = b
	}
	return hashBlob(data, w.p.hashLen) == e.oid
}
