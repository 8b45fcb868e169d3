// Package atomicfile writes files whole: a reader of the path sees the old
// content or the new one, never a mix or a prefix. The data goes to a
// temporary file in the path's own directory (so the rename never crosses
// file systems), which is then renamed over the path, or, by Create, linked
// to it so that an existing file is never replaced. The durable forms fsync
// the file before it takes the path's name and the directory after, so the
// result survives a power loss as well as a crash.
//
// It is the one home of that sequence; durable's journaled writes, which
// work inside an os.Root and refuse symbolic links, keep their own. Parent
// directories are the caller's: none is created here, because callers differ
// on their modes.
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data, mode perm, durably.
func Write(path string, data []byte, perm fs.FileMode) error {
	return replace(path, data, perm, true)
}

// WriteUnsynced is Write without the fsyncs: atomic for readers but not
// durable, for files that are not state (a copy, a configuration written
// again on every start).
func WriteUnsynced(path string, data []byte, perm fs.FileMode) error {
	return replace(path, data, perm, false)
}

// Create writes data to path, mode perm, durably, only if path does not
// exist; if it does, the error wraps fs.ErrExist and the file is left as it
// was. Two concurrent Creates of one path leave one of them whole, and the
// other gets fs.ErrExist.
func Create(path string, data []byte, perm fs.FileMode) error {
	tmp, err := temp(path, data, perm, true)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory, making a rename, link or create in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func replace(path string, data []byte, perm fs.FileMode, durable bool) error {
	tmp, err := temp(path, data, perm, durable)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if !durable {
		return nil
	}
	return SyncDir(filepath.Dir(path))
}

// temp writes data to a new temporary file beside path and returns its
// name; on an error nothing is left behind.
func temp(path string, data []byte, perm fs.FileMode, durable bool) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	// CreateTemp makes the file 0600; Chmod sets perm exactly, whatever the
	// umask.
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}
