package runs

import (
	"os"
	"path/filepath"
)

// FindKey looks for a repository's capability key (KeyPath) in dir and its
// ancestors: an agent's worktree lives under the repository's .apiary/.
// It returns "" when there is none.
func FindKey(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		if fi, err := os.Stat(KeyPath(dir)); err == nil && fi.Mode().IsRegular() {
			return KeyPath(dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
