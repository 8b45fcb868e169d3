package review

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// TestOperatorConfig: a file inside the repository is named for the review
// to read at its base, one outside is parsed now; a bad one wraps
// ErrConfig, a missing one does not.
func TestOperatorConfig(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "ci"), 0o755); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(outside, "review.yaml")
	bad := filepath.Join(outside, "bad.yaml")
	for name, data := range map[string]string{good: "{}\n", bad: "nonsense: [\n", filepath.Join(root, "ci", "review.yaml"): "{}\n"} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if cfg, path, err := OperatorConfig("", root); cfg != nil || path != "" || err != nil {
		t.Errorf("no file: %v %q %v", cfg, path, err)
	}
	if cfg, path, err := OperatorConfig(filepath.Join(root, "ci", "review.yaml"), root); cfg != nil || path != "ci/review.yaml" || err != nil {
		t.Errorf("a file in the repository: %v %q %v", cfg, path, err)
	}
	if cfg, path, err := OperatorConfig(good, root); cfg == nil || path != "" || err != nil {
		t.Errorf("a file outside: %v %q %v", cfg, path, err)
	}
	if _, _, err := OperatorConfig(bad, root); !errors.Is(err, ErrConfig) {
		t.Errorf("a bad file: %v, want ErrConfig", err)
	}
	if _, _, err := OperatorConfig(filepath.Join(outside, "none.yaml"), root); err == nil || errors.Is(err, ErrConfig) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestDurableScanner: the risk score's personal data is reported at its
// line; a credential format the built-in detectors cover is not; Close
// removes the workspace's directory.
func TestDurableScanner(t *testing.T) {
	t.Parallel()
	s, err := OpenDurableScanner(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	hits, err := s.ScanSecrets(t.Context(), "package x\n// mail alice@example.org\nconst k = \"ghp_"+strings.Repeat("a1B2", 9)+"\"\n")
	if err != nil {
		t.Fatal(err)
	}
	var email bool
	for _, h := range hits {
		if h.Pattern == "email" && h.Line == 2 && h.Family == "pii" {
			email = true
		}
		if coveredByBuiltins(h.Pattern) {
			t.Errorf("a covered pattern reported: %+v", h)
		}
	}
	if !email {
		t.Errorf("no email hit on line 2: %+v", hits)
	}
	dir := s.dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the workspace's directory is left: %v", err)
	}
}

// TestUncommittedAndOpenBoard: edits to tracked files are counted, new
// files are not; the default board is the repository's local one.
func TestUncommittedAndOpenBoard(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "a\n"})
	if n, err := Uncommitted(t.Context(), repo); err != nil || n != 0 {
		t.Errorf("a clean tree: %d %v", n, err)
	}
	for name, data := range map[string]string{"a.txt": "changed\n", "new.txt": "new\n"} {
		if err := os.WriteFile(filepath.Join(repo.Dir(), name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := Uncommitted(t.Context(), repo); err != nil || n != 1 {
		t.Errorf("one edit and one new file: %d %v", n, err)
	}
	root := t.TempDir()
	st, err := OpenBoard(t.Context(), "", root)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := os.Stat(filepath.Join(root, board.DefaultLocalPath)); err != nil {
		t.Errorf("no local board: %v", err)
	}
	if _, err := OpenBoard(t.Context(), "nonsense://x", root); err == nil || !strings.Contains(err.Error(), "opening the board nonsense://x") {
		t.Errorf("a bad DSN: %v", err)
	}
}
