//go:build !unix || aix

package rundir

import (
	"errors"
	"os"
)

type lockKind int

const (
	lockShared lockKind = iota
	lockExclusive
)

// errWouldBlock is never returned where file locks are not supported.
var errWouldBlock = errors.New("lock busy")

// Without flock every lock fails with ErrNoLocks: Log.Lock (and so a run)
// refuses, WithLock does not run its function, and a run never looks live
// to a reader (lockHeld is false). WorktreeLock.Do falls back to its
// in-process mutex.
func flockTry(*os.File, lockKind) error { return ErrNoLocks }
func flockWait(*os.File) error          { return ErrNoLocks }
func funlock(*os.File)                  {}
