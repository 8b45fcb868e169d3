//go:build darwin

package durable

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames fromDir/from to toDir/to, failing with EEXIST if
// the destination exists (renameatx_np RENAME_EXCL).
func renameNoReplace(fromDir *os.File, from string, toDir *os.File, to string) error {
	err := withFds(fromDir, toDir, func(ffd, tfd int) error {
		return unix.RenameatxNp(ffd, from, tfd, to, unix.RENAME_EXCL)
	})
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return errNoReplaceUnsupported
	}
	if err != nil {
		return &os.LinkError{Op: "renameatx_np", Old: from, New: to, Err: err}
	}
	return nil
}
