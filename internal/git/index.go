package git

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
)

// statData is what the index records of a file's lstat: git compares it
// with the file to decide, without reading it, that the file is unchanged.
// Mode is the file's full st_mode (type and permission bits), which the
// index does not store but the pool compares.
type statData struct {
	ctimeSec, ctimeNsec uint32
	mtimeSec, mtimeNsec uint32
	dev, ino            uint32
	uid, gid            uint32
	size                uint32
	mode                uint32
}

// indexEntry is one stage-0 entry of the index.
type indexEntry struct {
	path string
	mode uint32 // git mode: 0o100644, 0o100755 or 0o120000
	oid  string // raw bytes, not hex
	st   statData
	skip bool // skip-worktree: outside the sparse checkout, no file
}

// Index format constants (gitformat-index(5)).
const (
	indexSkipWorktree = 0x4000 // in the extended flags
	indexExtended     = 0x4000 // in the flags: extended flags follow
	indexNameMask     = 0x0fff
)

// encodeIndex serializes entries (sorted by path, stage 0 only, no
// extensions) as an index file: version 2, or 3 when an entry needs the
// extended flags (skip-worktree). ids are hashLen bytes; the trailing
// checksum is SHA-1 or SHA-256 to match.
func encodeIndex(entries []indexEntry, hashLen int) ([]byte, error) {
	version := uint32(2)
	size := 12 + hashLen
	for i := range entries {
		if entries[i].skip {
			version = 3
		}
		size += 40 + hashLen + 4 + len(entries[i].path) + 8
	}
	b := make([]byte, 0, size)
	b = append(b, "DIRC"...)
	b = binary.BigEndian.AppendUint32(b, version)
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
	for i := range entries {
		e := &entries[i]
		if i > 0 && entries[i-1].path >= e.path {
			return nil, fmt.Errorf("git: index entries out of order at %q", e.path)
		}
		start := len(b)
		for _, v := range [...]uint32{e.st.ctimeSec, e.st.ctimeNsec, e.st.mtimeSec, e.st.mtimeNsec, e.st.dev, e.st.ino, e.mode, e.st.uid, e.st.gid, e.st.size} {
			b = binary.BigEndian.AppendUint32(b, v)
		}
		if len(e.oid) != hashLen {
			return nil, fmt.Errorf("git: bad object id %x for %q", e.oid, e.path)
		}
		b = append(b, e.oid...)
		flags := uint16(min(len(e.path), indexNameMask))
		if e.skip {
			flags |= indexExtended
		}
		b = binary.BigEndian.AppendUint16(b, flags)
		if e.skip {
			b = binary.BigEndian.AppendUint16(b, indexSkipWorktree)
		}
		b = append(b, e.path...)
		// 1 to 8 NULs: the name stays NUL-terminated and the entry a
		// multiple of eight bytes long.
		pad := 8 - (len(b)-start)%8
		for range pad {
			b = append(b, 0)
		}
	}
	h := newHash(hashLen)
	h.Write(b)
	return h.Sum(b), nil
}

func newHash(hashLen int) hash.Hash {
	if hashLen == sha256.Size {
		return sha256.New()
	}
	return sha1.New()
}

// hashBlob returns the object id (raw) git gives data as a blob.
func hashBlob(data []byte, hashLen int) string {
	h := newHash(hashLen)
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return string(h.Sum(nil))
}

// writeInPlace overwrites the file at path with data, keeping its inode
// (creating it if missing). It is for the index and HEAD of a pooled
// worktree, which no other process writes while the pool does: replacing
// a file through a lock file and a rename costs this disk milliseconds
// (ext4 starts writing a file out when it is renamed over another). A
// reader that catches a file half written — `git gc` reads every worktree's
// index and HEAD — finds the index's checksum wrong and stops, as on any
// corrupt index, or HEAD unreadable and ignores it, which loses nothing:
// the commit a pooled HEAD names is a branch's or the caller's pinned base.
func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|noFollow, 0o666)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil {
		_, err = f.WriteAt(data, 0)
	}
	if err == nil && fi.Size() > int64(len(data)) {
		err = f.Truncate(int64(len(data)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// errLocked: a lock file git or another writer holds is in the way.
var errLocked = errors.New("git: lock file exists")

// writeLocked replaces dir/name with data the way git does: through
// name.lock, created exclusively, then renamed over name.
func writeLocked(dir, name string, data []byte) error {
	lock := filepath.Join(dir, name+".lock")
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s", errLocked, lock)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(lock, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(lock)
	}
	return err
}
