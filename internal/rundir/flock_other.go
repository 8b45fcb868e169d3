//go:build !unix

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

// errNoFlock: this platform has no flock; runs are not protected against
// a second process, and a run never looks live to a reader.
var errNoFlock = errors.New("file locks are not supported on this platform")

func flockTry(*os.File, lockKind) error { return errNoFlock }
func flockWait(*os.File) error          { return errNoFlock }
func funlock(*os.File)                  {}
