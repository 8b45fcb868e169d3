//go:build !linux

package git

import (
	"io/fs"
	"os"
)

// fastCheckout is false where the pool cannot read inode change times: every
// acquisition is a plain `git worktree add`, every release a removal.
const fastCheckout = false

// noFollow: without O_NOFOLLOW the pool never writes files itself here.
const noFollow = 0

func statOf(fs.FileInfo) (statData, bool) { return statData{}, false }

type changeTime struct{ sec, nsec int64 }

func (a changeTime) before(b changeTime) bool {
	return a.sec < b.sec || a.sec == b.sec && a.nsec < b.nsec
}

func changeTimeOf(fs.FileInfo) changeTime { return changeTime{} }

// lockDir opens dir/.pool.lock; without flock the pool cannot tell another
// process is using the directory.
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(dir+"/.pool.lock", os.O_RDWR|os.O_CREATE, 0o666)
}
