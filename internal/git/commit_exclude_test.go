package git

import (
	"os"
	"slices"
	"testing"
)

// TestCommitAllExcludeIgnored: an excluded path the repository's own
// .gitignore lists is left out without an error (git refuses to add a
// pathspec naming an ignored path), and a tracked file under an excluded
// path keeps HEAD's content, whatever the worktree holds.
func TestCommitAllExcludeIgnored(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, ignored := range []bool{true, false} {
		files := map[string]string{"a.txt": "a\n", ".apiary/kept.json": "{}\n"}
		if ignored {
			files[".gitignore"] = "/.apiary/\n"
		}
		r := newRepo(t, files)
		base, err := r.RevParse(ctx, "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		writeFiles(t, r.Dir(), map[string]string{"a.txt": "b\n", ".apiary/envelope.json": "{}", ".apiary/kept.json": "changed\n"})
		id, err := r.CommitAll(ctx, CommitOptions{Message: "x\n", Author: testSig, Exclude: []string{".apiary"}})
		if err != nil {
			t.Fatalf("ignored=%v: CommitAll: %v", ignored, err)
		}
		changes, err := r.DiffNameStatus(ctx, base, id)
		if err != nil {
			t.Fatal(err)
		}
		if want := []Change{{'M', "a.txt"}}; !slices.Equal(changes, want) {
			t.Errorf("ignored=%v: committed %q, want %q", ignored, changes, want)
		}
		b, err := r.ReadBlob(ctx, id, ".apiary/kept.json")
		switch {
		case ignored && err == nil:
			t.Errorf("an ignored, excluded file was committed: %q", b)
		case !ignored && (err != nil || string(b) != "{}\n"):
			t.Errorf("the tracked excluded file became %q (%v)", b, err)
		}
	}
	// A repository without a commit yet: excluded paths are only unstaged.
	dir := t.TempDir()
	sh(t, dir, nil, "init", "--quiet", "--initial-branch=main")
	fresh := New(dir, Options{Env: append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")})
	writeFiles(t, dir, map[string]string{"first.txt": "1\n", ".apiary/x": "x"})
	id, err := fresh.CommitAll(ctx, CommitOptions{Message: "x\n", Author: testSig, Exclude: []string{".apiary"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.ReadBlob(ctx, id, ".apiary/x"); err == nil {
		t.Error("an excluded file was committed in the first commit")
	}
	if b, err := fresh.ReadBlob(ctx, id, "first.txt"); err != nil || string(b) != "1\n" {
		t.Errorf("first.txt = %q, %v", b, err)
	}
}
