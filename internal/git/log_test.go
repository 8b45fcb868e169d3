package git

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestWorktreeAddDetached(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, map[string]string{"a.txt": "a\n"})
	head, _ := r.RevParse(ctx, "HEAD")
	wt := filepath.Join(t.TempDir(), "scratch")
	if err := r.WorktreeAddDetached(ctx, wt, head); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(wt, "a.txt")); err != nil || string(b) != "a\n" {
		t.Errorf("a.txt = %q, %v", b, err)
	}
	if _, err := r.At(wt).CurrentBranch(ctx); !errors.Is(err, ErrDetached) {
		t.Errorf("scratch worktree is on a branch: %v", err)
	}
	if err := r.WorktreeAddDetached(ctx, wt, head); !errors.Is(err, ErrExists) {
		t.Errorf("second add: %v, want ErrExists", err)
	}
	if err := r.WorktreeRemove(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if top, err := r.TopLevel(ctx); err != nil || filepath.Clean(top) != filepath.Clean(r.Dir()) {
		t.Errorf("TopLevel = %q, %v; want %q", top, err, r.Dir())
	}
}

func TestFirstParentLog(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, map[string]string{"a.txt": "a\n"})
	c0, _ := r.RevParse(ctx, "HEAD")
	side := commitOn(t, r, "side", c0, map[string]string{"b.txt": "b\n"})
	tree, _ := r.RevParse(ctx, side+"^{tree}")
	msg, _ := Message("merge side", "", []Trailer{{TrailerTask, "t1"}, {TrailerRun, "r1"}})
	m, err := r.CommitTree(ctx, tree, []string{c0, side}, msg, testSig, Signature{})
	if err != nil {
		t.Fatal(err)
	}
	msg2, _ := Message("plain", "body line", nil)
	c2, err := r.CommitTree(ctx, tree, []string{m}, msg2, testSig, Signature{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.FirstParentLog(ctx, c0, c2)
	if err != nil {
		t.Fatal(err)
	}
	// The side commit is reachable only through a second parent: not listed.
	if len(got) != 2 || got[0].ID != c2 || got[1].ID != m {
		t.Fatalf("log = %+v, want [%s %s]", got, c2, m)
	}
	if !slices.Equal(got[1].Parents, []string{c0, side}) || len(got[0].Trailers) != 0 {
		t.Errorf("entries %+v", got)
	}
	if v, _ := TrailerValue(got[1].Trailers, TrailerTask); v != "t1" {
		t.Errorf("trailers %+v", got[1].Trailers)
	}
	all, err := r.FirstParentLog(ctx, "", c2)
	if err != nil || len(all) != 3 {
		t.Errorf("whole chain: %d entries, %v", len(all), err)
	}
}

// TestSyncWorktree: after the checked-out branch is moved by update-ref,
// SyncWorktree brings the files and index along and keeps unrelated local
// changes; a conflicting local change makes it fail without damage.
func TestSyncWorktree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	c0, _ := r.RevParse(ctx, "HEAD")
	c1 := commitOn(t, r, "next", c0, map[string]string{"a.txt": "a2\n", "new.txt": "n\n"})
	if err := r.UpdateRef(ctx, "refs/heads/main", c1, c0, "test"); err != nil {
		t.Fatal(err)
	}
	if dirty, _ := r.DirtyPaths(ctx); len(dirty) == 0 {
		t.Fatal("moving the checked-out branch should leave the index behind")
	}
	writeFiles(t, r.Dir(), map[string]string{"b.txt": "local edit\n"})
	if err := r.SyncWorktree(ctx, c1); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a.txt": "a2\n", "new.txt": "n\n", "b.txt": "local edit\n"} {
		if b, _ := os.ReadFile(filepath.Join(r.Dir(), name)); string(b) != want {
			t.Errorf("%s = %q, want %q", name, b, want)
		}
	}
	if dirty, _ := r.DirtyPaths(ctx); !slices.Equal(dirty, []string{"b.txt"}) {
		t.Errorf("dirty after sync = %v, want only the local edit", dirty)
	}
	c2 := commitOn(t, r, "third", c1, map[string]string{"b.txt": "theirs\n"})
	if err := r.SyncWorktree(ctx, c2); err == nil {
		t.Error("sync over a conflicting local change succeeded")
	}
	if b, _ := os.ReadFile(filepath.Join(r.Dir(), "b.txt")); string(b) != "local edit\n" {
		t.Errorf("local change lost: %q", b)
	}
}
