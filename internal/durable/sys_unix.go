//go:build unix && !aix

package durable

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// errPlatform is nil where every feature of the package is available.
var errPlatform error

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

// withFds runs fn with the descriptors of two open directories.
func withFds(a, b *os.File, fn func(afd, bfd int) error) error {
	ac, err := a.SyscallConn()
	if err != nil {
		return err
	}
	bc, err := b.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	cerr := ac.Control(func(afd uintptr) {
		cerr := bc.Control(func(bfd uintptr) { opErr = fn(int(afd), int(bfd)) })
		if cerr != nil {
			opErr = cerr
		}
	})
	if cerr != nil {
		return cerr
	}
	return opErr
}

// renameAt renames fromDir/from over toDir/to (replacing it).
func renameAt(fromDir *os.File, from string, toDir *os.File, to string) error {
	err := withFds(fromDir, toDir, func(ffd, tfd int) error { return unix.Renameat(ffd, from, tfd, to) })
	if err != nil {
		return &os.LinkError{Op: "renameat", Old: from, New: to, Err: err}
	}
	return nil
}

// openAt opens name in dir with flags plus O_NOFOLLOW and O_CLOEXEC: a
// symlink as the last component fails with ELOOP instead of being followed.
// O_NONBLOCK keeps a FIFO planted in place of a file from hanging the open;
// it is cleared again, since regular files ignore it anyway.
func openAt(dir *os.File, name string, flags int, perm uint32) (*os.File, error) {
	dc, err := dir.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var opErr error
	cerr := dc.Control(func(dfd uintptr) {
		for {
			fd, opErr = unix.Openat(int(dfd), name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, perm)
			if opErr != unix.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return nil, cerr
	}
	if opErr != nil {
		return nil, &fs.PathError{Op: "openat", Path: name, Err: opErr}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// Flags of openAt.
const (
	oRead   = unix.O_RDONLY
	oRDWR   = unix.O_RDWR
	oCreate = unix.O_CREAT | unix.O_EXCL
	oAppend = unix.O_APPEND
)

// flock takes an exclusive flock(2) on f; with wait false it fails at once
// with errLockBusy when another open file description holds it. The lock
// belongs to the open file description, so it is released when f is closed
// or its process dies, however it dies.
func flock(f *os.File, wait bool) error {
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	cerr := c.Control(func(fd uintptr) {
		for {
			opErr = unix.Flock(int(fd), how)
			if opErr != unix.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	if errors.Is(opErr, unix.EWOULDBLOCK) {
		return errLockBusy
	}
	return opErr
}

// statAt lstats name in dir without following a symlink.
func statAt(dir *os.File, name string) (dev, ino uint64, err error) {
	dc, err := dir.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var st unix.Stat_t
	var opErr error
	cerr := dc.Control(func(dfd uintptr) { opErr = unix.Fstatat(int(dfd), name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if cerr != nil {
		return 0, 0, cerr
	}
	if opErr != nil {
		return 0, 0, &fs.PathError{Op: "fstatat", Path: name, Err: opErr}
	}
	return uint64(st.Dev), uint64(st.Ino), nil
}

// fileID returns the device and inode of fi.
func fileID(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}

// ownProcessGroup puts cmd in its own process group and kills the whole
// group when its context ends.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
