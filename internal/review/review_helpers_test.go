package review

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/local"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// reviewRepo makes a repository whose main holds base and whose branch
// feature adds head on top ("" deletes a file); main stays checked out.
func reviewRepo(t testing.TB, base, head map[string]string) *git.Repo {
	t.Helper()
	repo := gittest.NewRepo(t, base)
	branch(t, repo, "feature", "main", head)
	return repo
}

// branch commits files on a new branch started at from, then checks main
// out again.
func branch(t testing.TB, repo *git.Repo, name, from string, files map[string]string) {
	t.Helper()
	dir := repo.Dir()
	gittest.Git(t, dir, "checkout", "--quiet", "-b", name, from)
	for p, c := range files {
		if c == "" {
			if err := os.Remove(filepath.Join(dir, p)); err != nil {
				t.Fatal(err)
			}
			delete(files, p)
		}
	}
	gittest.WriteFiles(t, dir, files)
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", name)
	gittest.Git(t, dir, "checkout", "--quiet", "main")
}

// localBoard opens a real local board for the test.
func localBoard(t testing.TB) *board.Store {
	t.Helper()
	st, err := local.Open(context.Background(), filepath.Join(t.TempDir(), "board.db"), local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// mustConfig parses a review configuration or fails the test.
func mustConfig(t testing.TB, src string) *Config {
	t.Helper()
	c, err := ParseConfig("review.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newScanner is the secret scanner apiary review uses (the durable
// server's risk score).
func newScanner(t testing.TB) SecretScanner {
	t.Helper()
	s, err := OpenDurableScanner(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// review runs a review and fails the test on an error.
func review(t testing.TB, opt Options, req Request) *Report {
	t.Helper()
	rep, err := Run(t.Context(), opt, req)
	if err != nil {
		t.Fatalf("Review: %v", err)
	}
	return rep
}
