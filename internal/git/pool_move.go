package git

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// checkPath makes a Checkout's Path absolute and makes sure nothing is
// there yet, creating its parent directory as `git worktree add` does.
func checkPath(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if _, err := os.Lstat(abs); err == nil {
		return "", fmt.Errorf("%w: %s", ErrExists, abs)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	parent := filepath.Dir(abs)
	if err := os.MkdirAll(parent, 0o777); err != nil {
		return "", err
	}
	// git records a worktree by its real path; so does the pool.
	real, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return "", err
	}
	return filepath.Join(real, filepath.Base(abs)), nil
}

// where is the slot's worktree now: at its caller's Path, or at home in
// the pool's directory.
func (s *slot) where() string {
	if s.at != "" {
		return s.at
	}
	return s.path
}

// moveOut moves the slot's worktree to path, as `git worktree move` does: a
// rename, and the administrative directory's gitdir pointed at it. Under
// the worktree lock, so that no `git worktree prune` sees the one without
// the other.
func (p *WorktreePool) moveOut(s *slot, path string) error {
	return p.locked(func() error {
		if err := os.Rename(s.path, path); err != nil {
			return err
		}
		s.at = path
		return writeLocked(s.admin, "gitdir", []byte(filepath.Join(path, ".git")+"\n"))
	})
}

// moveHome brings a moved worktree back to the pool's directory.
func (p *WorktreePool) moveHome(s *slot) error {
	if s.at == "" {
		return nil
	}
	return p.locked(func() error {
		fi, err := os.Lstat(s.at)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("git: pooled worktree %s is no longer a directory", s.at)
		}
		if err := os.Rename(s.at, s.path); err != nil {
			return err
		}
		s.at = ""
		return writeLocked(s.admin, "gitdir", s.gitdir)
	})
}

// removeAt removes the worktree wherever it is, with ctx's values but not
// its cancellation (a removal cut short leaves metadata behind).
func (p *WorktreePool) removeAt(ctx context.Context, path string) {
	ctx = context.WithoutCancel(ctx)
	if err := p.locked(func() error { return p.repo.WorktreeRemove(ctx, path) }); err != nil {
		forceRemove(path)
		_ = p.locked(func() error { return p.repo.WorktreePrune(ctx) })
	}
}
