//go:build !linux

package durable

import (
	"errors"
	"io/fs"
	"os"
)

var errNoReplaceUnsupported = errors.New("durable: renameat2 RENAME_NOREPLACE unsupported")

func renameNoReplace(fromDir *os.File, from string, toDir *os.File, to string) error {
	return errNoReplaceUnsupported
}

func linkCount(fi fs.FileInfo) uint64 { return 1 }

func owner(fi fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

func processAlive(pid int) bool { return true }

func renameAt(fromDir *os.File, from string, toDir *os.File, to string) error {
	return errors.New("durable: renameat unsupported on this platform")
}
