//go:build !unix || aix

package durable

import (
	"io/fs"
	"os"
	"os/exec"
)

// errPlatform refuses Open: the write surface's guarantees rest on flock(2)
// across processes and on opening files without following symlinks
// (O_NOFOLLOW) and checking the opened descriptor, which this package
// implements for unix only (AIX has no flock).
var errPlatform = ErrPlatform

func linkCount(fi fs.FileInfo) uint64 { return 1 }

func owner(fi fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

func processAlive(pid int) bool { return true }

func renameAt(fromDir *os.File, from string, toDir *os.File, to string) error { return ErrPlatform }

func renameNoReplace(fromDir *os.File, from string, toDir *os.File, to string) error {
	return ErrPlatform
}

func openAt(dir *os.File, name string, flags int, perm uint32) (*os.File, error) {
	return nil, ErrPlatform
}

const (
	oRead   = 0
	oRDWR   = 1
	oCreate = 2
	oAppend = 4
)

func flock(f *os.File, wait bool) error { return ErrPlatform }

func statAt(dir *os.File, name string) (dev, ino uint64, err error) { return 0, 0, ErrPlatform }

func fileID(fi fs.FileInfo) (dev, ino uint64) { return 0, 0 }

func ownProcessGroup(cmd *exec.Cmd) {}
