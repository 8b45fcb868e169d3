package atomicfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// onlyEntries fails unless dir holds exactly the names given: no temporary
// file is left behind.
func onlyEntries(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(names) {
		t.Fatalf("%s holds %v, want %v", dir, got, names)
	}
	for i := range names {
		if got[i] != names[i] {
			t.Fatalf("%s holds %v, want %v", dir, got, names)
		}
	}
}

func checkFile(t *testing.T, path, want string, perm fs.FileMode) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Fatalf("%s holds %q, want %q", path, b, want)
	}
	if runtime.GOOS == "windows" {
		return
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != perm {
		t.Fatalf("%s has mode %v, want %v", path, fi.Mode().Perm(), perm)
	}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		write func(string, []byte, fs.FileMode) error
	}{{"Write", Write}, {"WriteUnsynced", WriteUnsynced}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := filepath.Join(dir, "f.json")
			if err := tt.write(p, []byte("one"), 0o640); err != nil {
				t.Fatal(err)
			}
			checkFile(t, p, "one", 0o640)
			// Replacing takes the new mode too: the file is a new one.
			if err := tt.write(p, []byte("two, longer"), 0o600); err != nil {
				t.Fatal(err)
			}
			checkFile(t, p, "two, longer", 0o600)
			onlyEntries(t, dir, "f.json")
		})
	}
}

func TestWriteFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A file cannot be renamed over a directory that has entries.
	p := filepath.Join(dir, "d")
	if err := os.MkdirAll(filepath.Join(p, "inner"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("x"), 0o644); err == nil {
		t.Fatal("Write over a directory succeeded")
	}
	onlyEntries(t, dir, "d")
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Write into a missing directory: %v, want fs.ErrNotExist (parents are the caller's)", err)
	}
}

// TestWriteReadersSeeWholeFiles: a reader racing with writers sees one of
// the contents written, never a mix or a prefix.
func TestWriteReadersSeeWholeFiles(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "f")
	a, b := bytes.Repeat([]byte("a"), 1<<16), bytes.Repeat([]byte("b"), 1<<17)
	if err := WriteUnsynced(p, a, 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := range 200 {
			data := a
			if i%2 == 0 {
				data = b
			}
			if err := WriteUnsynced(p, data, 0o644); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for reads := 0; ; reads++ {
		select {
		case <-done:
			wg.Wait()
			if reads == 0 {
				t.Log("no read raced with the writes")
			}
			return
		default:
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("a reader saw %d bytes that are neither content", len(got))
		}
	}
}

func TestCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	if err := Create(p, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkFile(t, p, "first", 0o600)
	if err := Create(p, []byte("second"), 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create of an existing file: %v, want fs.ErrExist", err)
	}
	checkFile(t, p, "first", 0o600)
	onlyEntries(t, dir, "key")
}

// TestCreateConcurrent: of many Creates of one path exactly one wins and its
// content is there whole; the rest get fs.ErrExist.
func TestCreateConcurrent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Create(p, bytes.Repeat([]byte{byte('a' + i)}, 4096), 0o600)
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("Creates %d and %d both succeeded", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, fs.ErrExist):
			t.Fatalf("Create %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no Create succeeded")
	}
	checkFile(t, p, string(bytes.Repeat([]byte{byte('a' + winner)}, 4096)), 0o600)
	onlyEntries(t, dir, "key")
}

func TestSyncDir(t *testing.T) {
	t.Parallel()
	if err := SyncDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("SyncDir of a missing directory: %v", err)
	}
}
