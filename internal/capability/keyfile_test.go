package capability

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyFile: a written key reads back, with mode 0600; an existing file
// is never overwritten; a short file and a failing source are errors that
// leave nothing behind.
func TestKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := filepath.Join(dir, "key")
	if err := WriteKeyFile(name, rand.Reader); err != nil {
		t.Fatal(err)
	}
	key, err := ReadKeyFile(name)
	if err != nil || len(key) != MinKeyLen {
		t.Fatalf("read back %d bytes, %v", len(key), err)
	}
	if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v", fi.Mode(), err)
	}
	if err := WriteKeyFile(name, rand.Reader); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("overwrite: %v", err)
	}
	if again, _ := ReadKeyFile(name); !bytes.Equal(again, key) {
		t.Error("the key changed")
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("tiny"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyFile(short); err == nil || !strings.Contains(err.Error(), "need at least") {
		t.Errorf("short key: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	if err := WriteKeyFile(empty, bytes.NewReader(nil)); err == nil {
		t.Error("a source without bytes made a key")
	}
	if _, err := os.Stat(empty); err == nil {
		t.Error("a failed write left a file")
	}
}
