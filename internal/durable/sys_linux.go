//go:build linux

package durable

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// errNoReplaceUnsupported means the filesystem cannot rename without
// replacing; callers fall back to link + unlink.
var errNoReplaceUnsupported = errors.New("durable: renameat2 RENAME_NOREPLACE unsupported")

// renameNoReplace renames fromDir/from to toDir/to, failing with EEXIST if
// the destination exists (renameat2 RENAME_NOREPLACE). Both names are
// relative to already-open directories, so no path is walked again.
func renameNoReplace(fromDir *os.File, from string, toDir *os.File, to string) error {
	fc, err := fromDir.SyscallConn()
	if err != nil {
		return err
	}
	tc, err := toDir.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	cerr := fc.Control(func(ffd uintptr) {
		cerr := tc.Control(func(tfd uintptr) {
			opErr = unix.Renameat2(int(ffd), from, int(tfd), to, unix.RENAME_NOREPLACE)
		})
		if cerr != nil {
			opErr = cerr
		}
	})
	if cerr != nil {
		return cerr
	}
	if errors.Is(opErr, unix.EINVAL) || errors.Is(opErr, unix.ENOSYS) {
		return errNoReplaceUnsupported
	}
	if opErr != nil {
		return &os.LinkError{Op: "renameat2", Old: from, New: to, Err: opErr}
	}
	return nil
}

// linkCount returns the number of hard links of fi.
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// owner returns fi's uid and gid.
func owner(fi fs.FileInfo) (uid, gid int, ok bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid), true
	}
	return 0, 0, false
}

// processAlive reports whether pid names a live process.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// renameAt renames fromDir/from over toDir/to (replacing it).
func renameAt(fromDir *os.File, from string, toDir *os.File, to string) error {
	fc, err := fromDir.SyscallConn()
	if err != nil {
		return err
	}
	tc, err := toDir.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	cerr := fc.Control(func(ffd uintptr) {
		cerr := tc.Control(func(tfd uintptr) {
			opErr = unix.Renameat(int(ffd), from, int(tfd), to)
		})
		if cerr != nil {
			opErr = cerr
		}
	})
	if cerr != nil {
		return cerr
	}
	if opErr != nil {
		return &os.LinkError{Op: "renameat", Old: from, New: to, Err: opErr}
	}
	return nil
}
