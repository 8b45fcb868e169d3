// Package gittest makes throwaway git repositories for tests: isolated
// from the user's git configuration, on branch main, with fixture files
// committed. It is imported only from _test.go files.
package gittest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/git"
)

// Env isolates test repositories from the user's git configuration and
// names a fixed author and committer.
var Env = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=Fixture", "GIT_AUTHOR_EMAIL=fixture@apiary.invalid",
	"GIT_COMMITTER_NAME=Fixture", "GIT_COMMITTER_EMAIL=fixture@apiary.invalid"}

// Git runs git in dir with Env and returns its trimmed output; it fails
// the test when git does.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), Env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// NewRepo makes a repository on branch main in a temporary directory with
// files committed, and returns a Repo for it that uses Env.
func NewRepo(t testing.TB, files map[string]string) *git.Repo {
	t.Helper()
	envtest.Command(t, "git")
	dir := t.TempDir()
	Git(t, dir, "init", "--quiet", "--initial-branch=main")
	WriteFiles(t, dir, files)
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", "initial")
	return git.New(dir, git.Options{Env: append(os.Environ(), Env...)})
}

// WriteFiles writes files (path relative to dir → content), creating
// directories.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Show returns a file's content at a revision.
func Show(t testing.TB, repo *git.Repo, rev, path string) string {
	t.Helper()
	b, err := repo.ReadBlob(t.Context(), rev, path)
	if err != nil {
		t.Fatalf("%s:%s: %v", rev, path, err)
	}
	return string(b)
}

// Commit applies files to repo's working tree ("" deletes a file) and
// renames (old → new), commits everything (even nothing) and returns the
// commit.
func Commit(t testing.TB, repo *git.Repo, files map[string]string, renames map[string]string) string {
	t.Helper()
	for from, to := range renames {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo.Dir(), to)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(repo.Dir(), from), filepath.Join(repo.Dir(), to)); err != nil {
			t.Fatal(err)
		}
	}
	write := map[string]string{}
	for name, content := range files {
		if content != "" {
			write[name] = content
		} else if err := os.Remove(filepath.Join(repo.Dir(), name)); err != nil {
			t.Fatal(err)
		}
	}
	WriteFiles(t, repo.Dir(), write)
	sig := git.Signature{Name: "Fixture", Email: "fixture@apiary.invalid"}
	id, err := repo.CommitAll(t.Context(), git.CommitOptions{Message: "change\n", Author: sig, AllowEmpty: true})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Replace replaces the first old in a fixture s with new; it panics when s
// lacks old, so a fixture edit that no longer applies fails loudly.
func Replace(s, old, new string) string {
	if !strings.Contains(s, old) {
		panic(fmt.Sprintf("fixture lacks %q", old))
	}
	return strings.Replace(s, old, new, 1)
}
