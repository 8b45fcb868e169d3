package git

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envtest"
)

var testSig = Signature{Name: "Apiary Test", Email: "test@apiary.invalid", When: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}

// sh runs git directly (not through Repo) to set up fixtures.
func sh(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=Fixture", "GIT_AUTHOR_EMAIL=fixture@apiary.invalid",
		"GIT_COMMITTER_NAME=Fixture", "GIT_COMMITTER_EMAIL=fixture@apiary.invalid",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a repository on branch main with files committed, and
// returns a Repo for it that ignores the user's git configuration.
func newRepo(t testing.TB, files map[string]string) *Repo {
	t.Helper()
	envtest.Command(t, "git")
	dir := t.TempDir()
	sh(t, dir, nil, "init", "--quiet", "--initial-branch=main")
	writeFiles(t, dir, files)
	sh(t, dir, nil, "add", "-A")
	sh(t, dir, nil, "commit", "--quiet", "--allow-empty", "-m", "initial")
	return New(dir, Options{Env: append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")})
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
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

// commitOn creates a commit on a new branch from base with files changed
// (content "" deletes the file), using a worktree, and returns its id.
func commitOn(t testing.TB, r *Repo, branch, base string, files map[string]string) string {
	t.Helper()
	ctx := context.Background()
	wt := filepath.Join(t.TempDir(), branch)
	if err := r.WorktreeAdd(ctx, wt, branch, base); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if content == "" {
			if err := os.Remove(filepath.Join(wt, name)); err != nil {
				t.Fatal(err)
			}
			delete(files, name)
		}
	}
	writeFiles(t, wt, files)
	id, err := r.At(wt).CommitAll(ctx, CommitOptions{Message: "change on " + branch + "\n", Author: testSig})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WorktreeRemove(ctx, wt); err != nil {
		t.Fatal(err)
	}
	return id
}
