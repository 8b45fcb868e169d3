//go:build unix && !aix

package rundir

import (
	"errors"
	"os"
	"syscall"
)

type lockKind int

const (
	lockShared    lockKind = syscall.LOCK_SH
	lockExclusive lockKind = syscall.LOCK_EX
)

// errWouldBlock is a busy lock's error, as flockTry returns it.
var errWouldBlock = syscall.EWOULDBLOCK

// flockTry takes a non-blocking flock of kind how on f.
func flockTry(f *os.File, how lockKind) error {
	err := syscall.Flock(int(f.Fd()), int(how)|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errWouldBlock
	}
	return err
}

// flockWait takes an exclusive flock on f, waiting for it.
func flockWait(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func funlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
