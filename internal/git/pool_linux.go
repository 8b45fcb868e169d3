//go:build linux

package git

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// fastCheckout reports whether the pool can check out and verify worktrees
// itself on this platform (it needs lstat's inode change time).
const fastCheckout = true

// noFollow makes open fail on a symbolic link.
const noFollow = syscall.O_NOFOLLOW

// statOf returns the index's view of a file's lstat; false when the
// platform did not provide it.
func statOf(fi fs.FileInfo) (statData, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return statData{}, false
	}
	return statData{
		ctimeSec: uint32(st.Ctim.Sec), ctimeNsec: uint32(st.Ctim.Nsec),
		mtimeSec: uint32(st.Mtim.Sec), mtimeNsec: uint32(st.Mtim.Nsec),
		dev: uint32(st.Dev), ino: uint32(st.Ino),
		uid: st.Uid, gid: st.Gid,
		size: uint32(st.Size),
		mode: st.Mode,
	}, true
}

// changeTime is a file's inode change time (ctime), which no user process
// can set: every write, chmod, rename or link of the file moves it.
type changeTime struct{ sec, nsec int64 }

func (a changeTime) before(b changeTime) bool {
	return a.sec < b.sec || a.sec == b.sec && a.nsec < b.nsec
}

func changeTimeOf(fi fs.FileInfo) changeTime {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return changeTime{}
	}
	return changeTime{st.Ctim.Sec, st.Ctim.Nsec}
}

// lockDir takes an exclusive, non-blocking lock on dir/.pool.lock, held
// until the returned file is closed (or the process dies).
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir+"/.pool.lock", os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, fmt.Errorf("%w: %s", ErrPoolBusy, dir)
		}
		return nil, err
	}
	return f, nil
}
