package git

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// bigRepo builds a repository of n files in 100 directories, committed on
// main, once per benchmark.
func bigRepo(b *testing.B, n int) *Repo {
	b.Helper()
	r := newRepo(b, nil)
	sh(b, r.Dir(), nil, "config", "gc.auto", "0") // no background gc competing with the benchmark
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

// commitChain adds n commits on top of base with git fast-import, each
// rewriting perCommit files of bigRepo's layout (chosen at random, seeded),
// and returns their ids in order.
func commitChain(b *testing.B, r *Repo, base string, n, perCommit, files int) []string {
	b.Helper()
	rng := rand.New(rand.NewPCG(7, 21))
	var in bytes.Buffer
	for c := range n {
		fmt.Fprintf(&in, "commit refs/heads/chain\nmark :%d\ncommitter Bench <bench@apiary.invalid> %d +0000\ndata 3\nc%d\n", c+1, 1767225600+c, c%10)
		if c == 0 {
			fmt.Fprintf(&in, "from %s\n", base)
		}
		for range perCommit {
			i := rng.IntN(files)
			p := fmt.Sprintf("pkg%02d/file%05d.go", i%100, i)
			content := fmt.Sprintf("package pkg\n\n// File %d, commit %d.\nconst C%d = %d\n", i, c, i, c)
			fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", p, len(content), content)
		}
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = r.Dir()
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v: %s", err, out)
	}
	ids := strings.Fields(sh(b, r.Dir(), nil, "rev-list", "--reverse", base+"..chain"))
	if len(ids) != n {
		b.Fatalf("%d commits in the chain, want %d", len(ids), n)
	}
	return ids
}

// BenchmarkWorktreePool10k measures acquiring a worktree on a new branch
// from a warm pool in a 10,000-file repository, each base differing from
// the previous task's by at most 100 files (a chain of commits that each
// rewrite 100 files at random): "full" checks everything out, "sparse" a
// cone of 10 of the 100 directories. Between acquisitions (timer stopped) a
// task edits, adds and ignores files and the release restores the
// worktree; the release's time is reported as release-p50-ms. "add" is the
// baseline in the same run and repository: `git worktree add -b` of the same
// commits (the removal untimed).
func BenchmarkWorktreePool10k(b *testing.B) {
	r := bigRepo(b, 10000)
	ctx := context.Background()
	base, err := r.RevParse(ctx, "HEAD")
	if err != nil {
		b.Fatal(err)
	}
	chain := commitChain(b, r, base, 64, 100, 10000)
	sh(b, r.Dir(), nil, "repack", "-a", "-d", "-q") // as a real repository's objects are
	var cone []string
	for d := range 10 {
		cone = append(cone, fmt.Sprintf("pkg%02d", d))
	}
	for _, bc := range []struct {
		name   string
		sparse []string
		dirs   int // the directories a task edits in
	}{{"full", nil, 100}, {"sparse", cone, 10}} {
		b.Run(bc.name, func(b *testing.B) {
			p, err := NewWorktreePool(ctx, r, PoolOptions{Dir: filepath.Join(b.TempDir(), "pool"), Size: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(ctx)
			steps := map[string][]time.Duration{}
			warm, err := p.Acquire(ctx, Checkout{Base: base, Sparse: bc.sparse})
			if err != nil {
				b.Fatal(err)
			}
			if err := warm.Release(ctx); err != nil {
				b.Fatal(err)
			}
			p.trace = func(step string, d time.Duration) { steps[step] = append(steps[step], d) }
			var acq, rel []time.Duration
			var acqT, relT []timing
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				branch := fmt.Sprintf("apiary/bench/%s%d", bc.name, i)
				var w *PooledWorktree
				ta := measure(p, func() {
					w, err = p.Acquire(ctx, Checkout{Base: chain[pingPong(i, len(chain))], Branch: branch, Sparse: bc.sparse})
				})
				if err != nil {
					b.Fatal(err)
				}
				acq, acqT = append(acq, ta.wall), append(acqT, ta)
				b.StopTimer()
				attempt(b, w.Path(), i, bc.dirs)
				tr := measure(p, func() { err = w.Release(ctx) })
				if err != nil {
					b.Fatal(err)
				}
				rel, relT = append(rel, tr.wall), append(relT, tr)
				if err := r.DeleteBranch(ctx, branch); err != nil {
					b.Fatal(err)
				}
				i++
				b.StartTimer()
			}
			b.StopTimer()
			if st := p.Stats(); st.Created != 1 || st.Unpooled != 0 || st.Broken != 0 {
				b.Fatalf("pool stats %+v: want one worktree reused throughout", st)
			}
			reportQuantiles(b, "", acq)
			reportQuantiles(b, "release-", rel)
			// The acquisitions' own work: their time on a CPU, this
			// process's and git's, which is what their wall time would
			// be on a machine with a CPU free for them.
			var work []time.Duration
			for _, t := range acqT {
				work = append(work, t.cpu)
			}
			reportQuantiles(b, "cpu-", work)
			logTail(b, "acquire", acqT)
			logTail(b, "release", relT)
			for _, k := range slices.Sorted(maps.Keys(steps)) {
				s := slices.Sorted(slices.Values(steps[k]))
				b.Logf("step %-8s p50 %6.2f ms  p99 %6.2f ms", k, float64(s[len(s)/2])/1e6, float64(s[len(s)*99/100])/1e6)
			}
			logLoad(b)
		})
	}
	b.Run("add", func(b *testing.B) {
		var add []time.Duration
		i := 0
		for b.Loop() {
			wt := filepath.Join(b.TempDir(), "add")
			branch := fmt.Sprintf("apiary/bench/add%d", i)
			start := time.Now()
			if err := r.WorktreeAdd(ctx, wt, branch, chain[i%len(chain)]); err != nil {
				b.Fatal(err)
			}
			add = append(add, time.Since(start))
			b.StopTimer()
			if err := r.WorktreeRemove(ctx, wt); err != nil {
				b.Fatal(err)
			}
			if err := r.DeleteBranch(ctx, branch); err != nil {
				b.Fatal(err)
			}
			i++
			b.StartTimer()
		}
		reportQuantiles(b, "", add)
		logLoad(b)
	})
}

// pingPong walks 0, 1, …, n-1, n-2, …, 0, 1, …: each step to a neighbour
// in the chain, whose commits differ by at most the files one rewrote (a
// wrap from the last back to the first would change them all at once).
func pingPong(i, n int) int {
	if n < 2 {
		return 0
	}
	k := i % (2 * (n - 1))
	if k >= n {
		k = 2*(n-1) - k
	}
	return k
}

func logLoad(b *testing.B) {
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		b.Logf("load average at the end: %s", strings.TrimSpace(string(la)))
	}
	// Pressure stall information: the share of time some (or all) tasks
	// waited for a CPU or the disk, machine-wide.
	for _, r := range []string{"cpu", "io"} {
		if psi, err := os.ReadFile("/proc/pressure/" + r); err == nil {
			b.Logf("%s pressure at the end: %s", r, strings.Join(strings.Fields(string(psi)), " "))
		}
	}
}

// attempt is what a task does to its worktree between acquisition and
// release: edits some tracked files (in the first dirs directories), adds
// untracked and ignored ones.
func attempt(b *testing.B, dir string, i, dirs int) {
	for k := range 5 {
		n := (i*37 + k*1999) % 10000
		n = n - n%100 + n%dirs
		p := filepath.Join(dir, fmt.Sprintf("pkg%02d/file%05d.go", n%100, n))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package pkg\n\n// edited by task %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for k := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("pkg%02d/new%d_%d.go", (i+k)%dirs, i, k))
		if err := os.WriteFile(p, []byte("package pkg\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "build"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "build", "out.bin"), []byte("ignored\n"), 0o644); err != nil {
		b.Fatal(err)
	}
}

// reportQuantiles reports the 50th and 99th percentiles of ds in
// milliseconds.
func reportQuantiles(b *testing.B, prefix string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(f float64) float64 {
		return float64(s[min(len(s)-1, int(f*float64(len(s))))]) / 1e6
	}
	b.ReportMetric(q(0.50), prefix+"p50-ms")
	b.ReportMetric(q(0.99), prefix+"p99-ms")
}
