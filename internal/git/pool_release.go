package git

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
)

// putBack returns an untouched slot to the idle list (a reused one) or
// removes it (a new one).
func (p *WorktreePool) putBack(ctx context.Context, s *slot, reused bool) {
	if !reused {
		p.evict(ctx, s)
		return
	}
	p.mu.Lock()
	p.idle = append(p.idle, s)
	p.stats.Idle = len(p.idle)
	p.mu.Unlock()
}

// evict removes a slot's worktree.
func (p *WorktreePool) evict(ctx context.Context, s *slot) {
	p.removeAt(ctx, s.where())
	p.mu.Lock()
	p.stats.Evicted++
	p.mu.Unlock()
}

// Trim removes idle worktrees beyond Size or older than MaxIdle.
func (p *WorktreePool) Trim(ctx context.Context) {
	p.mu.Lock()
	var out []*slot
	now := p.opt.Now()
	for len(p.idle) > p.opt.Size || len(p.idle) > 0 && p.opt.MaxIdle > 0 && now.Sub(p.idle[0].used) > p.opt.MaxIdle {
		out = append(out, p.idle[0])
		p.idle = p.idle[1:]
	}
	p.stats.Idle = len(p.idle)
	p.mu.Unlock()
	for _, s := range out {
		p.evict(ctx, s)
	}
}

// Stats returns what the pool did so far.
func (p *WorktreePool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close removes the idle worktrees and stops the pool's git processes. A
// worktree still acquired is removed when it is released.
func (p *WorktreePool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.stats.Idle = 0
	p.mu.Unlock()
	for _, s := range idle {
		p.evict(ctx, s)
	}
	p.objects.close()
	p.refs.close()
	return p.lock.Close()
}

// PooledWorktree is a worktree acquired from a WorktreePool.
type PooledWorktree struct {
	pool     *WorktreePool
	s        *slot
	path     string
	commit   string
	branch   string
	reused   bool
	released atomic.Bool
}

// Path returns the worktree's directory (where it was acquired, also after
// the release).
func (w *PooledWorktree) Path() string { return w.path }

// Repo returns a Repo running in the worktree, with the pool's options.
func (w *PooledWorktree) Repo() *Repo { return w.pool.repo.At(w.path) }

// Commit returns the commit checked out.
func (w *PooledWorktree) Commit() string { return w.commit }

// Branch returns the branch checked out, "" when HEAD is detached.
func (w *PooledWorktree) Branch() string { return w.branch }

// Reused reports whether the worktree served an earlier acquisition.
func (w *PooledWorktree) Reused() bool { return w.reused }

// Release gives the worktree back to the pool, which restores it for the
// next user (or removes it: when the pool is full, closed, or could not
// pool it). Every process started in it must have ended. Releasing twice is
// an error.
func (w *PooledWorktree) Release(ctx context.Context) error {
	if !w.released.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: worktree %s released twice", ErrBadArgument, w.path)
	}
	p := w.pool
	p.mu.Lock()
	p.stats.InUse--
	closed := p.closed
	p.mu.Unlock()
	if !w.s.pooled {
		return p.locked(func() error { return p.repo.WorktreeRemove(context.WithoutCancel(ctx), w.s.path) })
	}
	if closed {
		p.evict(ctx, w.s)
		return nil
	}
	err := p.moveHome(w.s)
	var restored, cleaned int
	if err == nil {
		restored, cleaned, err = p.scrub(w.s)
	}
	if err != nil {
		// Nothing of the user's is lost by removing it; the next
		// acquisition makes a new one.
		p.mu.Lock()
		p.stats.Broken++
		p.stats.BrokenReason = err.Error()
		p.mu.Unlock()
		p.evict(ctx, w.s)
		return nil
	}
	w.s.used = p.opt.Now()
	p.mu.Lock()
	p.stats.Restored += restored
	p.stats.Cleaned += cleaned
	if p.closed {
		p.mu.Unlock()
		p.evict(ctx, w.s)
		return nil
	}
	p.idle = append(p.idle, w.s)
	p.stats.Idle = len(p.idle)
	p.mu.Unlock()
	p.Trim(ctx)
	return nil
}

// forceRemove removes path and everything under it, first giving every
// directory in it the permissions a removal needs.
func forceRemove(path string) error {
	if err := os.RemoveAll(path); err == nil {
		return nil
	}
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700) // called before the directory is read
		}
		return nil
	})
	return os.RemoveAll(path)
}
