package runs

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFindKey: a worktree deep under the repository finds its key; a
// directory outside finds none, and a directory where the key should be
// is not a key.
func TestFindKey(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	deep := filepath.Join(root, ".apiary", "worktrees", "r", "t", "sub")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := FindKey(deep); got != "" {
		t.Fatalf("found %q before there is a key", got)
	}
	if err := os.MkdirAll(filepath.Dir(KeyPath(root)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(KeyPath(root), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := FindKey(deep); got != "" {
		t.Fatalf("a directory taken for a key: %q", got)
	}
	if err := os.Remove(KeyPath(root)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(KeyPath(root), make([]byte, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := FindKey(deep); got != KeyPath(root) {
		t.Errorf("FindKey = %q, want %q", got, KeyPath(root))
	}
	if got := FindKey(t.TempDir()); got != "" {
		t.Errorf("outside: %q", got)
	}
}
