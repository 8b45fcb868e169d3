package git

import (
	"errors"
	"maps"
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

// TestRemoteRefs lists a bare remote's refs under a prefix — only those
// whose full name starts with it — and deletes one only while it is still
// at the value listed.
func TestRemoteRefs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	local := newRepo(t, map[string]string{"a.txt": "a\n"})
	main0, err := local.RevParse(ctx, "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	remote := filepath.Join(t.TempDir(), "remote.git")
	sh(t, filepath.Dir(remote), nil, "init", "--quiet", "--bare", remote)
	c1 := commitOn(t, local, "work", main0, map[string]string{"b.txt": "b\n"})
	if err := local.Push(ctx, remote, []string{main0 + ":refs/heads/main", c1 + ":refs/heads/apiary/r1/a-1",
		main0 + ":refs/heads/apiary/r2/b-2", c1 + ":refs/heads/x/refs/heads/apiary/r3/c-3", c1 + ":refs/heads/apiary-other"}); err != nil {
		t.Fatal(err)
	}
	got, err := local.RemoteRefs(ctx, remote, "refs/heads/apiary/")
	want := map[string]string{"refs/heads/apiary/r1/a-1": c1, "refs/heads/apiary/r2/b-2": main0}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("RemoteRefs = %v, %v; want %v", got, err, want)
	}
	if got, err := local.RemoteRefs(ctx, remote, "refs/heads/none/"); err != nil || len(got) != 0 {
		t.Fatalf("RemoteRefs of an unused prefix = %v, %v", got, err)
	}
	// A stale value: nothing is deleted.
	var moved *RefMovedError
	if err := local.DeleteRemoteRef(ctx, remote, "refs/heads/apiary/r1/a-1", main0); !errors.As(err, &moved) || moved.Actual != c1 {
		t.Fatalf("delete with a stale value: %v", err)
	}
	if got, _ := local.RemoteRef(ctx, remote, "refs/heads/apiary/r1/a-1"); got != c1 {
		t.Fatalf("a delete with a stale value removed the branch (now %q)", got)
	}
	if err := local.DeleteRemoteRef(ctx, remote, "refs/heads/apiary/r1/a-1", c1); err != nil {
		t.Fatal(err)
	}
	if got, _ := local.RemoteRef(ctx, remote, "refs/heads/apiary/r1/a-1"); got != "" {
		t.Fatalf("deleted branch still at %s", got)
	}
	if got, _ := local.RemoteRef(ctx, remote, "refs/heads/apiary/r2/b-2"); got != main0 {
		t.Fatalf("another branch went too (now %q)", got)
	}
	if err := local.DeleteRemoteRef(ctx, remote, "-x", c1); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("option-like ref: %v", err)
	}
}
