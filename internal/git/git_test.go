package git

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRefs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, map[string]string{"a.txt": "a\n"})
	head, err := r.RevParse(ctx, "HEAD")
	if err != nil || len(head) != 40 {
		t.Fatalf("RevParse(HEAD) = %q, %v", head, err)
	}
	if _, err := r.RevParse(ctx, "no-such-branch"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown rev: %v", err)
	}
	if _, err := r.RevParse(ctx, "--all"); !errors.Is(err, ErrBadArgument) {
		t.Errorf("option-like rev: %v", err)
	}
	if b, err := r.CurrentBranch(ctx); b != "main" || err != nil {
		t.Errorf("CurrentBranch = %q, %v", b, err)
	}
	if ok, err := r.BranchExists(ctx, "main"); !ok || err != nil {
		t.Errorf("BranchExists(main) = %v, %v", ok, err)
	}
	if ok, err := r.BranchExists(ctx, "nope"); ok || err != nil {
		t.Errorf("BranchExists(nope) = %v, %v", ok, err)
	}
	sh(t, r.Dir(), nil, "checkout", "--quiet", "--detach")
	if _, err := r.CurrentBranch(ctx); !errors.Is(err, ErrDetached) {
		t.Errorf("detached: %v", err)
	}
	// A failing command is an *Error with the exit code and stderr.
	_, _, err = r.run(ctx, call{args: []string{"cat-file", "-p", "deadbeef"}})
	var ge *Error
	if !errors.As(err, &ge) || ge.ExitCode != 128 || !strings.Contains(ge.Stderr, "deadbeef") {
		t.Errorf("err = %#v", err)
	}
}

// TestUpdateRefCAS: the ref moves only from the expected value.
func TestUpdateRefCAS(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, map[string]string{"a.txt": "a\n"})
	c1, _ := r.RevParse(ctx, "HEAD")
	tree, _ := r.RevParse(ctx, "HEAD^{tree}")
	c2, err := r.CommitTree(ctx, tree, []string{c1}, "second\n", testSig, Signature{})
	if err != nil {
		t.Fatal(err)
	}
	c3, _ := r.CommitTree(ctx, tree, []string{c1}, "third\n", testSig, Signature{})

	if err := r.UpdateRef(ctx, "refs/heads/main", c2, c1, "integrate"); err != nil {
		t.Fatalf("CAS from the right value: %v", err)
	}
	// Someone else's expectation is stale now.
	err = r.UpdateRef(ctx, "refs/heads/main", c3, c1, "integrate")
	var moved *RefMovedError
	if !errors.Is(err, ErrRefMoved) || !errors.As(err, &moved) || moved.Actual != c2 || moved.Expected != c1 {
		t.Fatalf("stale CAS: %v", err)
	}
	if got, _ := r.RevParse(ctx, "refs/heads/main"); got != c2 {
		t.Errorf("main = %s after a failed CAS, want %s", got, c2)
	}
	// Create-only: old "" means the ref must not exist.
	if err := r.UpdateRef(ctx, "refs/heads/new", c3, "", ""); err != nil {
		t.Fatalf("create: %v", err)
	}
	err = r.UpdateRef(ctx, "refs/heads/new", c2, "", "")
	if !errors.As(err, &moved) || moved.Actual != c3 {
		t.Errorf("create over an existing ref: %v", err)
	}
	if err := r.UpdateRef(ctx, "main", c2, c1, ""); !errors.Is(err, ErrBadArgument) {
		t.Errorf("short ref name: %v", err)
	}
	if err := r.DeleteBranch(ctx, "new"); err != nil {
		t.Errorf("DeleteBranch: %v", err)
	}
	if ok, _ := r.BranchExists(ctx, "new"); ok {
		t.Error("branch still exists after DeleteBranch")
	}
	if err := r.DeleteBranch(ctx, "new"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting a missing branch: %v", err)
	}
}

// TestMergeTree: disjoint changes merge cleanly in memory; the merge commit
// goes on with commit-tree and CAS; a textual conflict is reported.
func TestMergeTree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, map[string]string{"a.txt": "one\ntwo\nthree\n", "b.txt": "b\n", "dir/c.txt": "c\n"})
	base, _ := r.RevParse(ctx, "HEAD")
	ours := commitOn(t, r, "ours", base, map[string]string{"a.txt": "ONE\ntwo\nthree\n", "new.txt": "new\n"})
	theirs := commitOn(t, r, "theirs", base, map[string]string{"b.txt": "B\n", "dir/c.txt": ""})

	res, err := r.MergeTree(ctx, ours, theirs, MergeTreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Clean || len(res.Conflicts) != 0 || len(res.Tree) != 40 {
		t.Fatalf("clean merge: %+v", res)
	}
	for path, want := range map[string]string{"a.txt": "ONE\ntwo\nthree\n", "b.txt": "B\n", "new.txt": "new\n"} {
		got, err := r.ReadBlob(ctx, res.Tree, path)
		if err != nil || string(got) != want {
			t.Errorf("%s in merged tree = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := r.ReadBlob(ctx, res.Tree, "dir/c.txt"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted file in merged tree: %v", err)
	}
	merge, err := r.CommitTree(ctx, res.Tree, []string{ours, theirs}, "merge\n", testSig, Signature{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateRef(ctx, "refs/heads/ours", merge, ours, "merge"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := r.IsAncestor(ctx, theirs, "ours"); !ok {
		t.Error("theirs is not an ancestor of the merged branch")
	}
	if mb, err := r.MergeBase(ctx, ours, theirs); err != nil || mb != base {
		t.Errorf("MergeBase = %s, %v; want %s", mb, err, base)
	}

	// Both sides change the same line.
	x := commitOn(t, r, "x", base, map[string]string{"a.txt": "uno\ntwo\nthree\n"})
	y := commitOn(t, r, "y", base, map[string]string{"a.txt": "eins\ntwo\nthree\n", "b.txt": "bee\n"})
	res, err = r.MergeTree(ctx, x, y, MergeTreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Clean || !slices.Equal(res.Conflicts, []string{"a.txt"}) || res.Tree == "" {
		t.Fatalf("conflicting merge: %+v", res)
	}
	if !slices.ContainsFunc(res.Messages, func(m MergeMessage) bool {
		return m.Type == "CONFLICT (contents)" && slices.Equal(m.Paths, []string{"a.txt"})
	}) {
		t.Errorf("no CONFLICT (contents) message for a.txt in %+v", res.Messages)
	}
	got, _ := r.ReadBlob(ctx, res.Tree, "a.txt")
	if !strings.Contains(string(got), "<<<<<<<") {
		t.Errorf("conflicted file lacks markers: %q", got)
	}
	// Forcing the merge base needs git 2.40.
	if v, _ := r.Version(ctx); v[0] == 2 && v[1] < 40 {
		if _, err := r.MergeTree(ctx, x, y, MergeTreeOptions{MergeBase: base}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("--merge-base on git %v: %v", v, err)
		}
	}
}

// TestWorktreeLifecycle: add at a pinned commit on a new branch, remove,
// prune — and nothing is left behind.
func TestWorktreeLifecycle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, map[string]string{"a.txt": "a\n"})
	base, _ := r.RevParse(ctx, "HEAD")
	// Move main on; the worktree must still start at the pinned base.
	sh(t, r.Dir(), nil, "commit", "--quiet", "--allow-empty", "-m", "later")
	wt := filepath.Join(t.TempDir(), "wt")
	if err := r.WorktreeAdd(ctx, wt, "apiary/run1/task1", base); err != nil {
		t.Fatal(err)
	}
	w := r.At(wt)
	if h, _ := w.RevParse(ctx, "HEAD"); h != base {
		t.Errorf("worktree HEAD = %s, want pinned %s", h, base)
	}
	if b, _ := w.CurrentBranch(ctx); b != "apiary/run1/task1" {
		t.Errorf("worktree branch = %q", b)
	}
	if _, err := os.Stat(filepath.Join(wt, "a.txt")); err != nil {
		t.Errorf("checkout: %v", err)
	}
	wts, err := r.Worktrees(ctx)
	if err != nil || len(wts) != 2 || wts[1].Branch != "refs/heads/apiary/run1/task1" || wts[1].Head != base {
		t.Fatalf("Worktrees = %+v, %v", wts, err)
	}
	if err := r.WorktreeAdd(ctx, wt+"2", "apiary/run1/task1", base); !errors.Is(err, ErrExists) {
		t.Errorf("second add on the same branch: %v", err)
	}
	// Leave changes behind: remove is forced.
	writeFiles(t, wt, map[string]string{"junk.txt": "x", "a.txt": "changed"})
	if err := r.WorktreeRemove(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteBranch(ctx, "apiary/run1/task1"); err != nil {
		t.Fatal(err)
	}
	assertClean(t, r, wt)

	// A worktree whose directory vanished is pruned by WorktreeRemove.
	wt3 := filepath.Join(t.TempDir(), "wt3")
	if err := r.WorktreeAdd(ctx, wt3, "b3", base); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(wt3); err != nil {
		t.Fatal(err)
	}
	if err := r.WorktreeRemove(ctx, wt3); err != nil {
		t.Fatalf("removing a vanished worktree: %v", err)
	}
	if err := r.DeleteBranch(ctx, "b3"); err != nil {
		t.Fatal(err)
	}
	assertClean(t, r, wt3)
}

func assertClean(t *testing.T, r *Repo, wt string) {
	t.Helper()
	if _, err := os.Stat(wt); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("worktree directory %s still exists (%v)", wt, err)
	}
	wts, err := r.Worktrees(t.Context())
	if err != nil || len(wts) != 1 {
		t.Errorf("worktrees left: %+v, %v", wts, err)
	}
	admin, _ := os.ReadDir(filepath.Join(r.Dir(), ".git", "worktrees"))
	if len(admin) != 0 {
		t.Errorf(".git/worktrees still holds %d entries", len(admin))
	}
	branches := sh(t, r.Dir(), nil, "for-each-ref", "--format=%(refname)", "refs/heads/")
	if branches != "refs/heads/main" {
		t.Errorf("branches left: %q", branches)
	}
}

// TestCommitAll: everything in the worktree is committed — modified and
// untracked files — except ignored and excluded ones; trailers round-trip;
// hooks never run.
func TestCommitAll(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, map[string]string{"keep.txt": "k\n", "edit.txt": "e\n", "gone.txt": "g\n", ".gitignore": "*.log\nbuild/\n"})
	base, _ := r.RevParse(ctx, "HEAD")
	// A hook that would fail every commit, both in .git/hooks and via a
	// configured hooksPath.
	hook := "#!/bin/sh\necho hook ran >&2\nexit 1\n"
	for _, d := range []string{filepath.Join(r.Dir(), ".git", "hooks"), filepath.Join(r.Dir(), "myhooks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{"pre-commit", "commit-msg", "post-commit", "prepare-commit-msg"} {
			if err := os.WriteFile(filepath.Join(d, h), []byte(hook), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	sh(t, r.Dir(), nil, "config", "core.hooksPath", "myhooks")

	writeFiles(t, r.Dir(), map[string]string{
		"edit.txt": "edited\n", "new/untracked.go": "package x\n",
		"debug.log": "ignored\n", "build/out.bin": "ignored\n", ".apiary/out/tasks/t.json": "{}",
	})
	if err := os.Remove(filepath.Join(r.Dir(), "gone.txt")); err != nil {
		t.Fatal(err)
	}
	msg, err := Message("apiary: task parse", "did the thing", []Trailer{
		{TrailerTask, "parse"}, {TrailerRun, "run-1"}, {TrailerAgent, "cc"}, {TrailerTrace, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
	})
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.CommitAll(ctx, CommitOptions{Message: msg, Author: testSig, Exclude: []string{".apiary", "myhooks"}})
	if err != nil {
		t.Fatalf("CommitAll (hooks must be disabled): %v", err)
	}
	changes, err := r.DiffNameStatus(ctx, base, id)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{{'M', "edit.txt"}, {'D', "gone.txt"}, {'A', "new/untracked.go"}}
	if !slices.Equal(changes, want) {
		t.Errorf("committed changes %q, want %q", changes, want)
	}
	ts, err := r.Trailers(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{TrailerTask, TrailerRun, TrailerAgent, TrailerTrace} {
		if v, ok := TrailerValue(ts, strings.ToLower(k)); !ok || v == "" {
			t.Errorf("trailer %s missing from %+v", k, ts)
		}
	}
	if v, _ := TrailerValue(ts, TrailerTask); v != "parse" {
		t.Errorf("Apiary-Task = %q", v)
	}
	author := sh(t, r.Dir(), nil, "log", "-1", "--format=%an <%ae> %aI", id)
	if author != "Apiary Test <test@apiary.invalid> 2026-01-02T03:04:05+00:00" {
		t.Errorf("author %q", author)
	}
	if _, err := r.CommitAll(ctx, CommitOptions{Message: msg, Author: testSig, Exclude: []string{".apiary", "myhooks"}}); !errors.Is(err, ErrNothingToCommit) {
		t.Errorf("second commit: %v", err)
	}
	empty, err := r.CommitAll(ctx, CommitOptions{Message: msg, Author: testSig, AllowEmpty: true, Exclude: []string{".apiary", "myhooks"}})
	if err != nil || empty == id {
		t.Errorf("empty commit: %s, %v", empty, err)
	}
}

func TestMessage(t *testing.T) {
	t.Parallel()
	got, err := Message(" subject ", "", []Trailer{{"Apiary-Task", "x"}})
	if err != nil || got != "subject\n\nApiary-Task: x\n" {
		t.Errorf("Message = %q, %v", got, err)
	}
	for _, bad := range []struct {
		subject string
		tr      []Trailer
	}{
		{"", nil},
		{"two\nlines", nil},
		{"s", []Trailer{{"Bad Key", "v"}}},
		{"s", []Trailer{{"K", "multi\nline"}}},
		{"s", []Trailer{{"K", " "}}},
	} {
		if _, err := Message(bad.subject, "", bad.tr); !errors.Is(err, ErrBadArgument) {
			t.Errorf("Message(%q, %v) = %v", bad.subject, bad.tr, err)
		}
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", ".gitignore": "*.log\n"})
	if d, err := r.DirtyPaths(ctx); len(d) != 0 || err != nil {
		t.Fatalf("fresh repo dirty: %v %v", d, err)
	}
	writeFiles(t, r.Dir(), map[string]string{"a.txt": "changed\n", "u/new file.txt": "n", "x.log": "ignored"})
	sh(t, r.Dir(), nil, "mv", "b.txt", "c.txt")
	es, err := r.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []StatusEntry{{' ', 'M', "a.txt", ""}, {'R', ' ', "c.txt", "b.txt"}, {'?', '?', "u/new file.txt", ""}}
	slices.SortFunc(es, func(a, b StatusEntry) int { return strings.Compare(a.Path, b.Path) })
	if !slices.Equal(es, want) {
		t.Errorf("Status = %+v, want %+v", es, want)
	}
	d, _ := r.DirtyPaths(ctx)
	slices.Sort(d)
	if !slices.Equal(d, []string{"a.txt", "c.txt"}) {
		t.Errorf("DirtyPaths = %v (untracked files must not count)", d)
	}
}
