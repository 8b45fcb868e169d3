package swarm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// gitLock serializes the git commands that read or change the repository's
// list of worktrees (worktree add, remove and prune; branch -D, which checks
// that no worktree has the branch out). Git does not lock that list: a
// worktree half-created by one command makes another fail ("failed to read
// .git/worktrees/X/commondir"). The lock is a mutex within the process and
// an flock on .apiary/worktrees.lock across apiary processes.
type gitLock struct {
	path string
	mu   sync.Mutex
}

func newGitLock(root string) *gitLock {
	return &gitLock{path: filepath.Join(root, StateDir, "worktrees.lock")}
}

// do runs fn holding the lock. If the lock file cannot be used, fn runs
// under the process-wide mutex alone.
func (l *gitLock) do(fn func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err == nil {
		defer f.Close()
		for {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
			if err != syscall.EINTR {
				break
			}
		}
		if err == nil {
			defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
	}
	return fn()
}

// ErrRunning: another process is executing the run.
var ErrRunning = errors.New("swarm: the run is in progress in another process")

// lock takes the run's lock, an flock on RUN/lock held until close: one
// process at a time executes a run, and `apiary status` can tell a live
// run from one whose process died.
func (s *store) lock() error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := flockSettled(f, syscall.LOCK_EX); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%w: %s", ErrRunning, s.id)
		}
		return err
	}
	s.lockf = f
	return nil
}

// lockSettle is how long a busy lock is retried before it counts as held.
// A process that forks while it has the lock file open (any exec in a
// process with many goroutines) hands its child a copy of the descriptor,
// which holds the flock until the child's exec closes it: a lock released
// a moment ago can still look held for that long.
const lockSettle = 500 * time.Millisecond

// flockSettled takes a non-blocking flock of kind how on f, retrying a busy
// lock for lockSettle so that a transient holder is not taken for a live one.
func flockSettled(f *os.File, how int) error {
	deadline := time.Now().Add(lockSettle)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runActive reports whether a process holds run dir's lock.
func runActive(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "lock"))
	if err != nil {
		return false
	}
	defer f.Close()
	err = flockSettled(f, syscall.LOCK_SH)
	if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}
