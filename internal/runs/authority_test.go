package runs

import (
	"bytes"
	"os"
	"sync"
	"testing"

	"github.com/apiary-dev/apiary/internal/rundir"
)

// TestLoadKeyConcurrentCreate: runs starting together in a repository with
// no key all end up with the same whole key — none reads it half-written
// (the key file used to be created empty, then filled) and none replaces
// another's.
func TestLoadKeyConcurrentCreate(t *testing.T) {
	for range 20 {
		root := t.TempDir()
		const n = 8
		keys := make([][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { keys[i], errs[i] = LoadKey(root, true, nil) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("LoadKey %d: %v", i, errs[i])
			}
			if !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("LoadKey %d returned a different key", i)
			}
		}
		onDisk, err := os.ReadFile(KeyPath(root))
		if err != nil || !bytes.Equal(onDisk, keys[0]) {
			t.Fatalf("key on disk %x, %v; want %x", onDisk, err, keys[0])
		}
		st, err := os.Stat(KeyPath(root))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("key file mode %v, %v", st.Mode(), err)
		}
		ents, _ := os.ReadDir(root + "/" + rundir.StateDir)
		for _, e := range ents {
			if e.Name() != "cap.key" && len(e.Name()) > 8 && e.Name()[:9] == ".cap.key-" {
				t.Fatalf("temporary file %s left behind", e.Name())
			}
		}
	}
}
