package rundir

import (
	"errors"
	"os"
	"sync"
	"time"
)

// ErrNoLocks: the platform has no flock(2) (Windows, AIX), so the locks
// that let processes share a run directory and the queues under .apiary
// cannot be taken. A run refuses to start rather than run unprotected.
var ErrNoLocks = errors.New("rundir: file locks (flock) are not supported on this platform")

// WithLock runs fn holding an exclusive flock on path, created with mode
// perm if missing, and waits for the lock: the lock of a file queue that
// several apiary processes change. ErrNoLocks where the platform has none
// (fn does not run).
func WithLock(path string, perm os.FileMode, fn func() error) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := flockWait(f); err != nil {
		return err
	}
	defer funlock(f)
	return fn()
}

// WorktreeLock serializes the git commands that read or change a
// repository's list of worktrees (worktree add, remove and prune; branch
// -D, which checks that no worktree has the branch out). Git does not lock
// that list: a worktree half-created by one command makes another fail
// ("failed to read .git/worktrees/X/commondir"). The lock is a mutex within
// the process and an flock on .apiary/worktrees.lock across apiary
// processes. Safe for concurrent use.
type WorktreeLock struct {
	path string
	mu   sync.Mutex
}

// NewWorktreeLock returns the worktree lock of the repository at root.
func NewWorktreeLock(root string) *WorktreeLock {
	return &WorktreeLock{path: State(root, "worktrees.lock")}
}

// Do runs fn holding the lock. If the lock file cannot be used, fn runs
// under the process-wide mutex alone.
func (l *WorktreeLock) Do(fn func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o644); err == nil {
		defer f.Close()
		if flockWait(f) == nil {
			defer funlock(f)
		}
	}
	return fn()
}

// lockSettle is how long a busy lock is retried before it counts as held.
// A process that forks while it has the lock file open (any exec in a
// process with many goroutines) hands its child a copy of the descriptor,
// which holds the flock until the child's exec closes it: a lock released
// a moment ago can still look held for that long.
const lockSettle = 500 * time.Millisecond

// flockSettled takes a non-blocking flock of kind how on f, retrying a busy
// lock for lockSettle so that a transient holder is not taken for a live
// one.
func flockSettled(f *os.File, how lockKind) error {
	deadline := time.Now().Add(lockSettle)
	for {
		err := flockTry(f, how)
		if err == nil || err != errWouldBlock || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lockHeld reports whether a process holds the flock on path.
func lockHeld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	err = flockSettled(f, lockShared)
	if err == nil {
		funlock(f)
		return false
	}
	return err == errWouldBlock
}
