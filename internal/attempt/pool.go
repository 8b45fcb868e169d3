package attempt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
)

// Pool lends worktrees: git.WorktreePool.
type Pool interface {
	Acquire(ctx context.Context, co git.Checkout) (*git.PooledWorktree, error)
}

var _ Pool = (*git.WorktreePool)(nil)

// acquire takes the attempt's worktree from its pool, at s.Worktree.
func acquire(ctx context.Context, s *Spec) (*git.PooledWorktree, error) {
	// Never cut short, like a worktree add.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	co := git.Checkout{Base: s.Base, Branch: s.Branch, Sparse: s.Sparse, Path: s.Worktree}
	w, err := s.Pool.Acquire(ctx, co)
	if s.Branch != "" && errors.Is(err, git.ErrExists) {
		if ok, _ := s.Repo.BranchExists(ctx, s.Branch); ok {
			// Left by an earlier attempt: apiary created it.
			if err = lockDo(s.Lock, func() error { return s.Repo.DeleteBranch(ctx, s.Branch) }); err == nil {
				w, err = s.Pool.Acquire(ctx, co)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("provisioning the worktree: %w", err)
	}
	return w, nil
}

// release gives a lent worktree back to its pool, then deletes the branch
// if asked. The pool restores the worktree or, when it cannot, removes it;
// either way it is no longer the attempt's.
func release(ctx context.Context, s *Spec, w *git.PooledWorktree, log *slog.Logger) {
	if err := w.Release(ctx); err != nil {
		log.Warn("releasing a worktree", "task_id", s.Ref.Task, "path", s.Worktree, "err", err)
		return
	}
	if s.DeleteBranch && s.Branch != "" {
		if err := lockDo(s.Lock, func() error { return s.Repo.DeleteBranch(ctx, s.Branch) }); err != nil {
			log.Warn("deleting an attempt's branch", "task_id", s.Ref.Task, "branch", s.Branch, "err", err)
			return
		}
	}
	if s.Hooks.Removed != nil {
		s.Hooks.Removed(s.Worktree)
	}
}

// SparseCone is the sparse checkout a task needs, from what its envelope
// declares: the directories of its inputs and its write scope (a path that
// may name a file counts by its directory). nil — the whole tree — when
// the task declares no inputs (what it reads is unknown), or when either
// list covers the whole tree. Files at the top of the tree are always
// checked out.
func SparseCone(e *envelope.Envelope) []string {
	if e == nil || len(e.Inputs.Paths) == 0 {
		return nil
	}
	var dirs []string
	for _, p := range append(append([]string{}, e.Inputs.Paths...), e.Authority.WriteScope...) {
		if p == "" || p == "." || p == "./" || strings.ContainsAny(p, "*?[\\") {
			return nil
		}
		if d, ok := strings.CutSuffix(p, "/"); ok {
			dirs = append(dirs, path.Clean(d))
			continue
		}
		p = path.Clean(p)
		if p == "." || strings.HasPrefix(p, "../") || p == ".." {
			return nil
		}
		if d := path.Dir(p); d != "." {
			dirs = append(dirs, d) // p itself may be a file
		} else {
			dirs = append(dirs, p) // a top-level name: a directory, or a file that is checked out anyway
		}
	}
	return dirs
}
