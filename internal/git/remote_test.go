package git

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestRemote clones a repository bare, pushes a branch, and moves the
// origin's main by compare-and-swap: a push whose lease is stale is refused
// whole and reports the value found.
func TestRemote(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	origin := newRepo(t, map[string]string{"a.txt": "a\n"})
	sh(t, origin.Dir(), nil, "config", "receive.denyCurrentBranch", "ignore")
	main0, err := origin.RevParse(ctx, "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	clone, err := Clone(ctx, origin.Dir(), filepath.Join(t.TempDir(), "c.git"), true, origin.opt)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := clone.RevParse(ctx, "refs/heads/main"); err != nil || got != main0 {
		t.Fatalf("clone main = %s, %v; want %s", got, err, main0)
	}
	c1 := commitOn(t, clone, "work", main0, map[string]string{"b.txt": "b\n"})
	if err := clone.Push(ctx, origin.Dir(), []string{c1 + ":refs/heads/apiary/x"}, PushLease{Ref: "refs/heads/apiary/x"}); err != nil {
		t.Fatalf("push new branch: %v", err)
	}
	if got, err := clone.RemoteRef(ctx, origin.Dir(), "refs/heads/apiary/x"); err != nil || got != c1 {
		t.Fatalf("RemoteRef = %s, %v; want %s", got, err, c1)
	}
	if got, err := clone.RemoteRef(ctx, origin.Dir(), "refs/heads/nope"); err != nil || got != "" {
		t.Fatalf("RemoteRef of a missing ref = %q, %v", got, err)
	}
	// CAS main from main0 to c1: succeeds once.
	if err := clone.Push(ctx, origin.Dir(), []string{c1 + ":refs/heads/main"}, PushLease{Ref: "refs/heads/main", Old: main0}); err != nil {
		t.Fatalf("CAS push: %v", err)
	}
	c2 := commitOn(t, clone, "work2", main0, map[string]string{"c.txt": "c\n"})
	err = clone.Push(ctx, origin.Dir(), []string{c2 + ":refs/heads/main", c2 + ":refs/heads/apiary/y"}, PushLease{Ref: "refs/heads/main", Old: main0})
	var moved *RefMovedError
	if !errors.As(err, &moved) || !errors.Is(err, ErrRefMoved) || moved.Actual != c1 {
		t.Fatalf("stale CAS push: %v; want a RefMovedError at %s", err, c1)
	}
	if got, _ := clone.RemoteRef(ctx, origin.Dir(), "refs/heads/apiary/y"); got != "" {
		t.Fatalf("an atomic push that failed still created apiary/y at %s", got)
	}
	// Fetch brings the new main into the clone.
	if err := clone.Fetch(ctx, origin.Dir(), "+refs/heads/main:refs/remotes/origin/main"); err != nil {
		t.Fatal(err)
	}
	if got, err := clone.RevParse(ctx, "refs/remotes/origin/main"); err != nil || got != c1 {
		t.Fatalf("fetched main = %s, %v; want %s", got, err, c1)
	}
	if err := clone.Fetch(ctx, origin.Dir(), "refs/heads/none:refs/remotes/origin/none"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("fetch of a missing ref: %v", err)
	}
	if _, err := Clone(ctx, "-bad", filepath.Join(t.TempDir(), "x"), false, origin.opt); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("Clone of an option-like url: %v", err)
	}
}
