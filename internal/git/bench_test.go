package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigRepo builds a repository of n files in 100 directories, committed on
// main, once per benchmark.
func bigRepo(b *testing.B, n int) *Repo {
	b.Helper()
	r := newRepo(b, nil)
	writeSmallFiles(b, r.Dir(), n)
	sh(b, r.Dir(), nil, "add", "-A")
	sh(b, r.Dir(), nil, "commit", "--quiet", "-m", "fixture")
	return r
}

// BenchmarkWorktreeAdd10k measures provisioning a task's worktree — `git
// worktree add -b` at a pinned commit — in a 10,000-file repository.
// Removal happens with the timer stopped (see BenchmarkWorktreeLifecycle10k).
func BenchmarkWorktreeAdd10k(b *testing.B) {
	r := bigRepo(b, 10000)
	ctx := context.Background()
	base, err := r.RevParse(ctx, "HEAD")
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		wt := filepath.Join(root, fmt.Sprintf("t%d", i))
		branch := fmt.Sprintf("apiary/bench/t%d", i)
		i++
		if err := r.WorktreeAdd(ctx, wt, branch, base); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := r.WorktreeRemove(ctx, wt); err != nil {
			b.Fatal(err)
		}
		if err := r.DeleteBranch(ctx, branch); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkWriteFiles10k is the floor BenchmarkWorktreeAdd10k is compared
// with in the same run: creating the same 10,000 files and 100 directories
// with os.WriteFile, which is what any checkout must at least do.
func BenchmarkWriteFiles10k(b *testing.B) {
	root := b.TempDir()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		writeSmallFiles(b, filepath.Join(root, fmt.Sprintf("t%d", i)), 10000)
		i++
	}
}

// writeSmallFiles writes n small Go files into 100 directories under dir.
func writeSmallFiles(b *testing.B, dir string, n int) {
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("pkg%02d", i%100), fmt.Sprintf("file%05d.go", i))
		if i < 100 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package pkg\n\n// File %d.\nconst C%d = %d\n", i, i, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWorktreeLifecycle10k measures a task's whole worktree lifecycle:
// add, remove --force, branch -D.
func BenchmarkWorktreeLifecycle10k(b *testing.B) {
	r := bigRepo(b, 10000)
	ctx := context.Background()
	base, err := r.RevParse(ctx, "HEAD")
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		wt := filepath.Join(root, fmt.Sprintf("t%d", i))
		branch := fmt.Sprintf("apiary/bench/t%d", i)
		i++
		if err := r.WorktreeAdd(ctx, wt, branch, base); err != nil {
			b.Fatal(err)
		}
		if err := r.WorktreeRemove(ctx, wt); err != nil {
			b.Fatal(err)
		}
		if err := r.DeleteBranch(ctx, branch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIntegrate10k measures the integrator's git work per task when
// the head moved (excluding checks): merge-tree of head and candidate,
// commit-tree of the merge, update-ref compare-and-swap. Each candidate
// changes one file on the original base, so every merge is a real
// three-way merge against a head that has moved.
func BenchmarkIntegrate10k(b *testing.B) {
	r := bigRepo(b, 10000)
	ctx := context.Background()
	base, err := r.RevParse(ctx, "HEAD")
	if err != nil {
		b.Fatal(err)
	}
	index := filepath.Join(b.TempDir(), "index")
	env := []string{"GIT_INDEX_FILE=" + index}
	// candidate makes a commit on base that rewrites file i, with plumbing.
	candidate := func(i int) string {
		path := fmt.Sprintf("pkg%02d/file%05d.go", i%100, i%10000)
		sh(b, r.Dir(), env, "read-tree", base)
		content := fmt.Sprintf("package pkg\n\n// File %d, edited.\n", i)
		f := filepath.Join(b.TempDir(), "c")
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		blob := sh(b, r.Dir(), nil, "hash-object", "-w", f)
		sh(b, r.Dir(), env, "update-index", "--cacheinfo", "100644,"+blob+","+path)
		tree := sh(b, r.Dir(), env, "write-tree")
		return sh(b, r.Dir(), nil, "commit-tree", tree, "-p", base, "-m", "task "+path)
	}
	head := base
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		cand := candidate(i)
		i++
		b.StartTimer()
		res, err := r.MergeTree(ctx, head, cand, MergeTreeOptions{})
		if err != nil || !res.Clean {
			b.Fatalf("merge: %+v %v", res, err)
		}
		merged, err := r.CommitTree(ctx, res.Tree, []string{head, cand}, "apiary: integrate\n", testSig, Signature{})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.UpdateRef(ctx, "refs/heads/main", merged, head, "integrate"); err != nil {
			b.Fatal(err)
		}
		head = merged
	}
	b.StopTimer()
	if n := strings.Count(sh(b, r.Dir(), nil, "rev-list", "--merges", "main"), "\n"); i > 1 && n+1 != i {
		b.Fatalf("%d merges on main after %d integrations", n+1, i)
	}
}
