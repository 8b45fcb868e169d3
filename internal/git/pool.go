package git

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrPoolBusy: another live pool (in this process or another) owns the
// directory.
var ErrPoolBusy = errors.New("git: worktree pool directory in use")

// poolBusyGrace is how long opening a pool waits for a busy directory's
// lock before failing with ErrPoolBusy. A killed pool's lock can outlive
// its process by a moment: a child it was starting holds a copy of the
// lock until that child's exec closes it.
const poolBusyGrace = 2 * time.Second

// PoolOptions configure a WorktreePool. Only Dir is required.
type PoolOptions struct {
	// Dir holds the pool's worktrees; it is created if missing. The pool owns
	// it: a second pool on the same Dir fails with ErrPoolBusy (after up to
	// poolBusyGrace of retries) while the first is open, and worktrees a dead
	// pool left there are removed when the next one opens (their state is
	// unknown).
	Dir string
	// Size is how many idle worktrees the pool keeps for reuse; default 4. A
	// release beyond it removes the least recently used idle worktree. It
	// does not limit how many are acquired at once.
	Size int
	// MaxIdle removes a worktree idle longer than this, at the next Release
	// or Trim; 0 keeps idle worktrees however old.
	MaxIdle time.Duration
	// Now is the clock MaxIdle is measured with; default time.Now.
	Now func() time.Time
	// Lock runs the pool's `git worktree add`, `remove` and `prune`, which
	// race with one another in one repository (git reads every worktree's
	// administrative files while another is being made). A caller that runs
	// its own passes the lock it runs them under (the run directory's
	// worktree lock); default a mutex of the pool's own.
	Lock WorktreeLocker
}

// Checkout is what an acquired worktree holds.
type Checkout struct {
	// Base is the commit to check out: an object id (as the runtime pins
	// it) or any revision git resolves to a commit.
	Base string
	// Branch, if set, is created at Base and checked out, as `git worktree
	// add -b` does; ErrExists if it exists. Empty detaches HEAD at Base.
	Branch string
	// Sparse, if set, are the directories of a cone-mode sparse checkout
	// (what `git sparse-checkout set --cone` takes): the files at the top,
	// those directly inside each directory's parents, and everything under
	// each directory. Empty checks out everything.
	Sparse []string
	// Path, if set, is where the worktree is to be, instead of a directory
	// of the pool's choosing: nothing may be there, and its parent must be
	// on the pool directory's file system (a reused worktree is moved there,
	// as `git worktree move` does, and back on release). A process that
	// dies holding a worktree moved to Path leaves it registered there, for
	// the caller to remove as it would a `git worktree add` of its own.
	Path string
}

// WorktreePool provides linked worktrees of one repository at chosen
// commits, reusing released ones instead of creating and removing a
// worktree per task.
//
// A reused worktree is made identical to a fresh `git worktree add` of the
// same commit (`git sparse-checkout set --cone` for a sparse one): the same
// files with the same bytes, modes and symbolic links, nothing else —
// neither untracked nor ignored files, nor any directory the last user
// made — an index with the same entries, a clean `git status`, HEAD on the
// new branch or detached at the commit, and none of the last user's
// operation state (merge, rebase, bisect, locks). Acquire makes it so by
// moving HEAD and rewriting only the files whose blob differs from what the
// worktree last held; Release restores what its user changed, found by
// comparing every file's lstat — inode change time included, which no
// process can set back — with what the pool recorded when it wrote it, and
// by comparing contents where the timestamps cannot tell.
//
// What survives a release is what is not the worktree's: the branch its
// user committed on (HEAD is detached from it, so it can be deleted or
// merged), the objects, the stash and the shared configuration — exactly
// what would survive `git worktree remove`. HEAD's reflog is kept too.
//
// The pool checks worktrees out itself only where git's checkout writes a
// blob's bytes unchanged; when a setting or an attribute could convert
// content (see Stats().Unpooled), or on platforms without inode change
// times, Acquire falls back to `git worktree add` and Release to `git
// worktree remove`.
//
// A WorktreePool is safe for concurrent use. The caller must end every
// process it started in an acquired worktree before releasing it.
type WorktreePool struct {
	repo     *Repo
	opt      PoolOptions
	dir      string
	common   string
	hashLen  int
	filePerm fs.FileMode // 0o666 less the umask: what git creates files with
	execPerm fs.FileMode
	dirPerm  fs.FileMode

	objects *objectReader
	refs    *refUpdater
	conv    *conversions
	trees   treeCache
	lock    *os.File

	sparseOnce sync.Mutex
	sparseOK   bool // extensions.worktreeConfig is set

	// trace, when set (by benchmarks), hears how long each step of an
	// acquisition took.
	trace func(step string, d time.Duration)

	mu     sync.Mutex
	idle   []*slot // least recently used first
	seq    int
	closed bool
	stats  PoolStats
}

// PoolStats count what a pool did.
type PoolStats struct {
	Idle     int // worktrees waiting for reuse now
	InUse    int // worktrees acquired and not released
	Created  int // worktrees created by the pool (git worktree add)
	Reused   int // acquisitions served by an idle worktree
	Evicted  int // worktrees removed: beyond Size, older than MaxIdle, broken, or at Close
	Unpooled int // acquisitions git checked out because the pool could not (Reason says why)
	// Written and Removed count files the pool wrote and removed on
	// acquisition; Restored counts files a release found changed, and
	// Cleaned the untracked files and directories it removed.
	Written, Removed, Restored, Cleaned int
	// Reason is why the last unpooled acquisition was not pooled.
	Reason string
	// Broken counts released worktrees the pool could not restore (and
	// removed instead); BrokenReason says why, for the last one.
	Broken       int
	BrokenReason string
}

// slot is one worktree of the pool.
type slot struct {
	path      string // its home in the pool's directory
	at        string // where it is while acquired with a Checkout.Path; "" at home
	admin     string // its administrative directory in the common git dir
	gitlink   []byte // the worktree's .git file, as git wrote it
	gitdir    []byte // admin/gitdir, as git wrote it
	commondir []byte // admin/commondir, as git wrote it
	st        *checkoutState
	pooled    bool // false: git checked it out, and Release removes it
	used      time.Time
}

// lockDirWaiting is lockDir, retried while the directory is busy for up
// to poolBusyGrace or until ctx ends.
func lockDirWaiting(ctx context.Context, dir string) (*os.File, error) {
	deadline := time.Now().Add(poolBusyGrace)
	for {
		lock, err := lockDir(dir)
		if !errors.Is(err, ErrPoolBusy) || !time.Now().Before(deadline) {
			return lock, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// NewWorktreePool opens a pool of worktrees of repo (its main worktree or
// any linked one) in opt.Dir.
func NewWorktreePool(ctx context.Context, repo *Repo, opt PoolOptions) (*WorktreePool, error) {
	if opt.Dir == "" {
		return nil, fmt.Errorf("%w: worktree pool needs a directory", ErrBadArgument)
	}
	if opt.Size <= 0 {
		opt.Size = 4
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Lock == nil {
		opt.Lock = &mutexLocker{}
	}
	dir, err := filepath.Abs(opt.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	lock, err := lockDirWaiting(ctx, dir)
	if err != nil {
		return nil, err
	}
	p := &WorktreePool{repo: repo, opt: opt, dir: dir, lock: lock}
	if err := p.init(ctx); err != nil {
		lock.Close()
		return nil, err
	}
	return p, nil
}

func (p *WorktreePool) init(ctx context.Context) error {
	common, err := p.repo.out(ctx, "rev-parse", "--git-common-dir")
	if err != nil {
		return err
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(p.repo.Dir(), common)
	}
	if p.common, err = filepath.Abs(common); err != nil {
		return err
	}
	format, err := p.repo.out(ctx, "rev-parse", "--show-object-format")
	if err != nil {
		return err
	}
	switch format {
	case "sha1":
		p.hashLen = 20
	case "sha256":
		p.hashLen = 32
	default:
		return fmt.Errorf("%w: object format %q", ErrUnsupported, format)
	}
	// What the umask leaves of git's 0666 and 0777, read off a probe file.
	probe := filepath.Join(p.dir, ".pool.umask")
	os.Remove(probe)
	if err := os.Mkdir(probe, 0o777); err != nil {
		return err
	}
	fi, err := os.Stat(probe)
	os.Remove(probe)
	if err != nil {
		return err
	}
	p.dirPerm = fi.Mode().Perm()
	p.execPerm = p.dirPerm
	p.filePerm = p.dirPerm & 0o666
	p.objects = newObjectReader(p.repo)
	p.refs = newRefUpdater(p.repo)
	p.conv = newConversions(p.repo, p.common)
	p.trees.init(32 << 20)
	return p.removeLeftovers(ctx)
}

// removeLeftovers removes what a dead pool left in the directory.
func (p *WorktreePool) removeLeftovers(ctx context.Context) error {
	wts, err := p.repo.Worktrees(ctx)
	if err != nil {
		return err
	}
	for _, w := range wts {
		if filepath.Dir(w.Path) == p.dir {
			if w.Locked {
				// A pool killed inside its `git worktree add` leaves the
				// new worktree locked ("initializing"), which neither
				// remove nor prune would touch.
				_, _, _ = p.repo.run(ctx, call{args: []string{"worktree", "unlock", w.Path}})
			}
			if err := p.locked(func() error { return p.repo.WorktreeRemove(ctx, w.Path) }); err != nil {
				forceRemove(w.Path)
			}
		}
	}
	ents, err := os.ReadDir(p.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() != ".pool.lock" {
			if err := forceRemove(filepath.Join(p.dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return p.locked(func() error { return p.repo.WorktreePrune(ctx) })
}

// locked runs f under opt.Lock.
func (p *WorktreePool) locked(f func() error) error { return p.opt.Lock.Do(f) }

// WorktreeLocker serializes the commands that change a repository's list
// of worktrees: Do runs fn while no other such command runs.
type WorktreeLocker interface {
	Do(fn func() error) error
}

// mutexLocker is the default WorktreeLocker: a mutex of the pool's own.
type mutexLocker struct{ mu sync.Mutex }

func (l *mutexLocker) Do(fn func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fn()
}

// Acquire returns a worktree holding co. It reuses an idle worktree when
// there is one (preferring one already at the same tree and sparse cone)
// and creates one otherwise.
func (p *WorktreePool) Acquire(ctx context.Context, co Checkout) (_ *PooledWorktree, err error) {
	if co.Branch != "" {
		if err := checkRev(co.Branch); err != nil {
			return nil, err
		}
		if co.Branch == "HEAD" || strings.HasPrefix(co.Branch, "refs/") {
			return nil, fmt.Errorf("%w: branch name %q", ErrBadArgument, co.Branch)
		}
	}
	if err := checkRev(co.Base); err != nil {
		return nil, err
	}
	if co.Path, err = checkPath(co.Path); err != nil {
		return nil, err
	}
	cn, err := newCone(co.Sparse)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	step := func(name string) {
		if p.trace != nil {
			p.trace(name, time.Since(t0))
			t0 = time.Now()
		}
	}
	commit, tree, err := p.resolve(ctx, co.Base)
	step("resolve")
	if err != nil {
		return nil, err
	}
	reason := ""
	if !fastCheckout {
		reason = "no inode change times on this platform"
	} else if reason, err = p.conv.configReason(ctx); err != nil {
		return nil, err
	}
	step("config")
	if reason != "" {
		return p.acquireUnpooled(ctx, co, commit, cn, reason)
	}
	if cn != nil {
		if err := p.enableWorktreeConfig(ctx); err != nil {
			return nil, err
		}
	}
	s, err := p.take(tree, cn)
	if err != nil {
		return nil, err
	}
	reused := s != nil
	if s == nil {
		if s, err = p.create(ctx, commit); err != nil {
			return nil, err
		}
	}
	step("take")
	pl, err := p.plan(ctx, s.st, commit, tree, cn)
	step("plan")
	if errors.Is(err, errIneligible) {
		p.putBack(ctx, s, reused)
		return p.acquireUnpooled(ctx, co, commit, cn, strings.TrimPrefix(err.Error(), errIneligible.Error()+": "))
	}
	if err != nil {
		p.evict(ctx, s)
		return nil, err
	}
	if co.Branch != "" {
		// First, so that a name git refuses leaves the worktree untouched.
		ref := "refs/heads/" + co.Branch
		if err := p.refs.create(ctx, ref, commit); err != nil {
			p.putBack(ctx, s, reused)
			return nil, err
		}
		defer func() {
			if err != nil {
				_ = p.refs.remove(context.WithoutCancel(ctx), ref, commit)
			}
		}()
		step("ref")
	}
	if err = p.apply(ctx, s, pl, co.Branch); err != nil {
		p.evict(ctx, s)
		return nil, err
	}
	if co.Path != "" {
		if err = p.moveOut(s, co.Path); err != nil {
			p.evict(ctx, s)
			return nil, err
		}
		step("move")
	}
	p.mu.Lock()
	p.stats.InUse++
	if reused {
		p.stats.Reused++
	}
	p.stats.Written += len(pl.write)
	p.stats.Removed += len(pl.remove)
	p.mu.Unlock()
	return &PooledWorktree{pool: p, s: s, path: s.where(), commit: commit, branch: co.Branch, reused: reused}, nil
}

// resolve returns the commit base names (hex) and its tree (raw id).
func (p *WorktreePool) resolve(ctx context.Context, base string) (commit, tree string, err error) {
	obs, err := p.objects.get(ctx, base+"^{commit}")
	if err != nil {
		return "", "", err
	}
	c := obs[0]
	t, ok := strings.CutPrefix(string(c.data), "tree ")
	if !ok || len(t) < 2*p.hashLen {
		return "", "", fmt.Errorf("git: commit %s has no tree", c.oid)
	}
	raw, err := hex.DecodeString(t[:2*p.hashLen])
	if err != nil {
		return "", "", fmt.Errorf("git: commit %s: %w", c.oid, err)
	}
	return c.oid, string(raw), nil
}

// take removes and returns the best idle slot for tree and cone, nil when
// none is idle.
func (p *WorktreePool) take(tree string, cn *cone) (*slot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("git: worktree pool closed")
	}
	best, score := -1, -1
	for i := len(p.idle) - 1; i >= 0; i-- { // most recently used first
		s := p.idle[i]
		sc := 0
		if s.st.cone.equal(cn) {
			sc += 2
		}
		if s.st.tree == tree {
			sc++
		}
		if sc > score {
			best, score = i, sc
		}
	}
	if best < 0 {
		return nil, nil
	}
	s := p.idle[best]
	p.idle = slices.Delete(p.idle, best, best+1)
	p.stats.Idle = len(p.idle)
	return s, nil
}

// create adds a worktree with nothing checked out, for the pool to fill.
func (p *WorktreePool) create(ctx context.Context, commit string) (*slot, error) {
	p.mu.Lock()
	path := filepath.Join(p.dir, fmt.Sprintf("wt%d", p.seq))
	p.seq++
	p.mu.Unlock()
	err := p.locked(func() error {
		_, _, err := p.repo.run(ctx, call{args: []string{"worktree", "add", "--quiet", "--no-checkout", "--detach", path, commit}})
		return err
	})
	if err != nil {
		return nil, err
	}
	s, err := p.slotAt(path)
	if err != nil {
		_ = p.locked(func() error { return p.repo.WorktreeRemove(context.WithoutCancel(ctx), path) })
		return nil, err
	}
	s.st = &checkoutState{missing: map[string]bool{}}
	s.pooled = true
	p.mu.Lock()
	p.stats.Created++
	p.mu.Unlock()
	return s, nil
}

// slotAt records the administrative files git made for the worktree at path.
func (p *WorktreePool) slotAt(path string) (*slot, error) {
	link, err := os.ReadFile(filepath.Join(path, ".git"))
	if err != nil {
		return nil, err
	}
	admin, ok := strings.CutPrefix(strings.TrimSpace(string(link)), "gitdir: ")
	if !ok {
		return nil, fmt.Errorf("git: unexpected .git file in %s", path)
	}
	gitdir, err := os.ReadFile(filepath.Join(admin, "gitdir"))
	if err != nil {
		return nil, err
	}
	commondir, err := os.ReadFile(filepath.Join(admin, "commondir"))
	if err != nil {
		return nil, err
	}
	return &slot{path: path, admin: admin, gitlink: link, gitdir: gitdir, commondir: commondir}, nil
}

// acquireUnpooled has git check the worktree out, for a repository whose
// content git might convert; Release removes it.
func (p *WorktreePool) acquireUnpooled(ctx context.Context, co Checkout, commit string, cn *cone, reason string) (*PooledWorktree, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("git: worktree pool closed")
	}
	path := filepath.Join(p.dir, fmt.Sprintf("wt%d", p.seq))
	p.seq++
	p.mu.Unlock()
	if co.Path != "" {
		path = co.Path
	}
	err := p.locked(func() error {
		if co.Branch != "" {
			return p.repo.WorktreeAdd(ctx, path, co.Branch, commit)
		}
		return p.repo.WorktreeAddDetached(ctx, path, commit)
	})
	if err != nil {
		return nil, err
	}
	if cn != nil {
		// --skip-checks: a cone directory may name a file (a write scope
		// entry the caller could not tell apart), which matches nothing.
		args := append([]string{"sparse-checkout", "set", "--cone", "--skip-checks"}, cn.dirs...)
		if _, _, err := p.repo.At(path).run(ctx, call{args: args}); err != nil {
			_ = p.locked(func() error { return p.repo.WorktreeRemove(context.WithoutCancel(ctx), path) })
			return nil, err
		}
	}
	p.mu.Lock()
	p.stats.InUse++
	p.stats.Created++
	p.stats.Unpooled++
	p.stats.Reason = reason
	p.mu.Unlock()
	return &PooledWorktree{pool: p, s: &slot{path: path}, path: path, commit: commit, branch: co.Branch}, nil
}

// enableWorktreeConfig sets extensions.worktreeConfig, which per-worktree
// sparse checkouts need, the way `git sparse-checkout` does: core.bare and
// core.worktree move from the shared configuration to the main worktree's
// own first, or every linked worktree of a bare repository would take
// itself for bare.
func (p *WorktreePool) enableWorktreeConfig(ctx context.Context) error {
	p.sparseOnce.Lock()
	defer p.sparseOnce.Unlock()
	if p.sparseOK {
		return nil
	}
	shared := filepath.Join(p.common, "config")
	main := filepath.Join(p.common, "config.worktree")
	get := func(key string, typ ...string) (string, bool, error) {
		args := append(append([]string{"config", "--file", shared}, typ...), "--get", key)
		v, code, err := p.repo.run(ctx, call{args: args, okExit: []int{1}})
		return strings.TrimSpace(string(v)), code == 0, err
	}
	v, ok, err := get("extensions.worktreeConfig", "--type=bool")
	if err != nil {
		return err
	}
	if !ok || v != "true" {
		if _, _, err := p.repo.run(ctx, call{args: []string{"config", "--file", shared, "extensions.worktreeConfig", "true"}}); err != nil {
			return err
		}
		for _, key := range []string{"core.bare", "core.worktree"} {
			var typ []string
			if key == "core.bare" {
				typ = []string{"--type=bool"}
			}
			v, ok, err := get(key, typ...)
			if err != nil {
				return err
			}
			if !ok || key == "core.bare" && v != "true" {
				continue // core.bare=false may be negating a global true: it stays
			}
			if _, _, err := p.repo.run(ctx, call{args: []string{"config", "--file", main, key, v}}); err != nil {
				return err
			}
			if _, _, err := p.repo.run(ctx, call{args: []string{"config", "--file", shared, "--unset", key}}); err != nil {
				return err
			}
		}
	}
	p.sparseOK = true
	return nil
}
