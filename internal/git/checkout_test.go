package git

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMoveCheckout: after the checked-out branch moved by update-ref,
// MoveCheckout brings index and files along even when a file the move
// changes was touched (new timestamps, same content); a real local edit
// to such a file blocks it with ErrCheckoutBlocked naming the file and
// changes nothing; DetachHead then leaves the checkout with nothing
// staged.
func TestMoveCheckout(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	c0, _ := r.RevParse(ctx, "HEAD")
	c1 := commitOn(t, r, "next", c0, map[string]string{"a.txt": "a2\n"})
	if err := r.UpdateRef(ctx, "refs/heads/main", c1, c0, "test"); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(3 * time.Second)
	if err := os.Chtimes(filepath.Join(r.Dir(), "a.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	if err := r.MoveCheckout(ctx, c0, c1); err != nil {
		t.Fatalf("a touched file blocked the move: %v", err)
	}
	if idx, _ := r.IndexTree(ctx); idx != mustTree(t, r, c1) {
		t.Error("the index is not at the new commit")
	}
	c2 := commitOn(t, r, "third", c1, map[string]string{"b.txt": "theirs\n"})
	if err := r.UpdateRef(ctx, "refs/heads/main", c2, c1, "test"); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, r.Dir(), map[string]string{"b.txt": "mine\n"})
	err := r.MoveCheckout(ctx, c1, c2)
	if !errors.Is(err, ErrCheckoutBlocked) || !strings.Contains(err.Error(), "b.txt") {
		t.Fatalf("a conflicting edit: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(r.Dir(), "b.txt")); string(b) != "mine\n" {
		t.Errorf("the local edit was lost: %q", b)
	}
	if err := r.DetachHead(ctx, c1); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.Status(ctx); len(st) != 1 || st[0].Path != "b.txt" || st[0].X != ' ' {
		t.Errorf("status after detaching: %+v", st)
	}
	if head, _ := r.RevParse(ctx, "HEAD"); head != c1 {
		t.Errorf("HEAD %s, want %s", head, c1)
	}
	if m, _ := r.RevParse(ctx, "refs/heads/main"); m != c2 {
		t.Error("the branch moved")
	}
}

func mustTree(t *testing.T, r *Repo, rev string) string {
	t.Helper()
	tr, err := r.TreeOf(t.Context(), rev)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestBranches lists branches by prefix and refuses an option.
func TestBranches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, map[string]string{"a": "a\n"})
	c0, _ := r.RevParse(ctx, "HEAD")
	for _, b := range []string{"apiary/r1/a", "apiary/r1/b.2", "apiary/r10/a", "other"} {
		commitOn(t, r, b, c0, map[string]string{"x": b})
	}
	got, err := r.Branches(ctx, "apiary/r1/")
	if err != nil || !slices.Equal(got, []string{"apiary/r1/a", "apiary/r1/b.2"}) {
		t.Errorf("Branches = %v, %v", got, err)
	}
	if _, err := r.Branches(ctx, "--all"); !errors.Is(err, ErrBadArgument) {
		t.Errorf("an option as prefix: %v", err)
	}
}
