//go:build unix && !aix

package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestWithLock: while fn runs, the flock is held against every other open
// of the file (another process's, or this one's: flock locks belong to the
// open file); it is released when fn returns, and fn's error comes back.
func TestWithLock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".lock")
	probe := func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		err = flockTry(f, lockShared)
		if err == nil {
			funlock(f)
		}
		return err
	}
	boom := errors.New("boom")
	err := WithLock(path, 0o600, func() error {
		if err := probe(); err != errWouldBlock {
			t.Errorf("inside WithLock another open took the lock: %v", err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("WithLock = %v, want fn's error", err)
	}
	if err := probe(); err != nil {
		t.Errorf("after WithLock the lock is still held: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v %v, want mode 0600", fi, err)
	}
	if err := WithLock(filepath.Join(path, "no", "dir"), 0o600, func() error { t.Error("fn ran"); return nil }); err == nil {
		t.Error("WithLock on an unopenable path: nil error")
	}
}
