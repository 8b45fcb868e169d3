//go:build linux

package durable

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames fromDir/from to toDir/to, failing with EEXIST if
// the destination exists (renameat2 RENAME_NOREPLACE). Both names are
// relative to already-open directories, so no path is walked again.
func renameNoReplace(fromDir *os.File, from string, toDir *os.File, to string) error {
	err := withFds(fromDir, toDir, func(ffd, tfd int) error {
		return unix.Renameat2(ffd, from, tfd, to, unix.RENAME_NOREPLACE)
	})
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return errNoReplaceUnsupported
	}
	if err != nil {
		return &os.LinkError{Op: "renameat2", Old: from, New: to, Err: err}
	}
	return nil
}
