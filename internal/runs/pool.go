package runs

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// poolDirName is the directory of a run's worktree pool, among the run's
// worktrees (no attempt's is named so: theirs are NAME-N).
const poolDirName = ".pool"

// poolDir is where run id keeps its idle worktrees.
func poolDir(root, id string) string { return rundir.State(root, "worktrees", id, poolDirName) }

// worktreePool is the run's pool, opened on first use; nil (each attempt
// adds its own worktree) when the configuration turns it off or it cannot
// be opened.
func (r *runner) worktreePool() attempt.Pool {
	if r.s.WorktreePool.Off {
		return nil
	}
	r.poolOnce.Do(func() {
		size := r.s.WorktreePool.Size
		if size == 0 {
			size = max(r.maxPar, 1)
		}
		p, err := git.NewWorktreePool(r.runCtx, r.repo, git.PoolOptions{Dir: poolDir(r.repo.Dir(), r.rec.RunID),
			Size: size, MaxIdle: r.s.WorktreePool.MaxIdle, Now: r.s.now, Lock: r.wt})
		if err != nil {
			r.s.log.Warn("no worktree pool: every attempt adds its own worktree", "err", err)
			return
		}
		r.pool = p
	})
	if r.pool == nil {
		return nil // not a nil *git.WorktreePool in an interface
	}
	return r.pool
}

// closePool removes the pool's idle worktrees and its directory, once
// every attempt has ended.
func (r *runner) closePool() {
	r.poolOnce.Do(func() {}) // none opened now
	if r.pool == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.runCtx), attempt.CleanupTimeout)
	defer cancel()
	if err := r.pool.Close(ctx); err != nil {
		r.s.log.Warn("closing the worktree pool", "err", err)
		return
	}
	_ = os.RemoveAll(poolDir(r.repo.Dir(), r.rec.RunID)) // its lock file alone
}

// releaseWorktree gives a scratch worktree back to the pool, even after
// ctx ended.
func (r *runner) releaseWorktree(ctx context.Context, task string, w *git.PooledWorktree) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attempt.CleanupTimeout)
	defer cancel()
	if err := w.Release(cctx); err != nil {
		r.s.log.Warn("releasing worktree", "task_id", task, "path", w.Path(), "err", err)
		return
	}
	_ = r.st.Emit(rundir.Event{Kind: rundir.EvWorktreeRemoved, Task: task, Path: w.Path()})
}

// removePool removes the pool a dead process of a run left: its worktrees,
// registered or not, git's records of them, and the directory. Opening the
// pool does the first two (see git.NewWorktreePool); it fails with
// git.ErrPoolBusy while a live process holds the pool.
func removePool(ctx context.Context, repo *git.Repo, lock git.WorktreeLocker, dir string) error {
	p, err := git.NewWorktreePool(ctx, repo, git.PoolOptions{Dir: dir, Lock: lock})
	if err != nil {
		return err
	}
	if err := p.Close(ctx); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// isPoolDir reports whether path is a run's pool directory.
func isPoolDir(root, path string) bool {
	rel, err := filepath.Rel(rundir.WorktreesDir(root), path)
	if err != nil {
		return false
	}
	run, name, ok := strings.Cut(filepath.ToSlash(rel), "/")
	return ok && run != "" && run != "." && run != ".." && name == poolDirName
}
