package git

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var poolSeeds = flag.Int("pool.seeds", 3, "random sequences TestWorktreePoolRandom runs (make bench runs more)")

func newTestPool(t *testing.T, r *Repo, opt PoolOptions) *WorktreePool {
	t.Helper()
	if opt.Dir == "" {
		opt.Dir = filepath.Join(t.TempDir(), "pool")
	}
	p, err := NewWorktreePool(t.Context(), r, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

func acquire(t *testing.T, p *WorktreePool, co Checkout) *PooledWorktree {
	t.Helper()
	w, err := p.Acquire(t.Context(), co)
	if err != nil {
		t.Fatalf("Acquire(%+v): %v", co, err)
	}
	return w
}

// TestWorktreePoolIdentity acquires, messes up and releases one worktree
// over and over, moving it between commits, branches and sparse cones; after
// every acquisition it must equal a fresh `git worktree add`.
func TestWorktreePoolIdentity(t *testing.T) {
	t.Parallel()
	f := newPoolFixture(t)
	p := newTestPool(t, f.r, PoolOptions{Size: 1})
	steps := []Checkout{
		{Base: f.c1, Branch: "task-1"},
		{Base: f.c2, Branch: "task-2"},
		{Base: f.c1},
		{Base: f.c3, Branch: "task-3", Sparse: []string{"app/one"}},
		{Base: f.c2, Sparse: []string{"app/two", "lib"}},
		{Base: f.c2, Branch: "task-4", Sparse: []string{"app/two", "lib"}},
		{Base: f.c3},
		{Base: f.c3, Branch: "task-5"},
		{Base: "main~2", Branch: "task-6", Sparse: []string{"src"}},
		{Base: f.c2},
	}
	for i, co := range steps {
		if i%3 == 1 {
			co.Path = filepath.Join(t.TempDir(), "task", "wt")
		}
		w := acquire(t, p, co)
		if co.Path != "" && w.Path() != co.Path {
			t.Fatalf("step %d: Path() = %s, want %s", i, w.Path(), co.Path)
		}
		if want := i > 0; w.Reused() != want {
			t.Fatalf("step %d: Reused() = %v, want %v", i, w.Reused(), want)
		}
		if co.Base == "main~2" {
			co.Base = f.c1
		}
		if w.Commit() != co.Base {
			t.Fatalf("step %d: Commit() = %s, want %s", i, w.Commit(), co.Base)
		}
		assertIdentical(t, f.r, w, co)
		mess(t, w.Path(), nil)
		if err := w.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	st := p.Stats()
	if st.Created != 1 || st.Reused != len(steps)-1 || st.Broken != 0 || st.Unpooled != 0 {
		t.Errorf("stats %+v: want one worktree reused %d times, none broken or unpooled", st, len(steps)-1)
	}
	if st.Restored == 0 || st.Cleaned == 0 {
		t.Errorf("stats %+v: the releases restored or cleaned nothing", st)
	}
}

// TestWorktreePoolRandom runs random sequences of checkouts and random
// subsets of mess; make bench runs more seeds (-pool.seeds).
func TestWorktreePoolRandom(t *testing.T) {
	t.Parallel()
	f := newPoolFixture(t)
	commits := []string{f.c1, f.c2, f.c3}
	cones := [][]string{nil, nil, {"app"}, {"app/one", "lib"}, {"src/sub"}, {"app/three"}}
	for seed := range *poolSeeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 21))
		p := newTestPool(t, f.r, PoolOptions{Size: 2})
		var held []*PooledWorktree
		for i := range 8 {
			co := Checkout{Base: commits[rng.IntN(len(commits))], Sparse: cones[rng.IntN(len(cones))]}
			if rng.IntN(2) == 0 {
				co.Branch = "r" + string(rune('a'+seed)) + "-" + string(rune('a'+i))
			}
			w := acquire(t, p, co)
			assertIdentical(t, f.r, w, co)
			mess(t, w.Path(), rng)
			held = append(held, w)
			if len(held) > 1 || rng.IntN(2) == 0 {
				k := rng.IntN(len(held))
				if err := held[k].Release(t.Context()); err != nil {
					t.Fatal(err)
				}
				held = append(held[:k], held[k+1:]...)
			}
		}
		for _, w := range held {
			must(t, w.Release(t.Context()))
		}
		if st := p.Stats(); st.Broken != 0 || st.Idle > 2 {
			t.Errorf("seed %d: stats %+v", seed, st)
		}
		must(t, p.Close(t.Context()))
	}
}

// TestWorktreePoolBranches: a branch that exists is ErrExists and leaves the
// idle worktree usable; a released worktree frees its branch, whose commits
// stay.
func TestWorktreePoolBranches(t *testing.T) {
	t.Parallel()
	f := newPoolFixture(t)
	p := newTestPool(t, f.r, PoolOptions{})
	w := acquire(t, p, Checkout{Base: f.c1, Branch: "feature"})
	writeFiles(t, w.Path(), map[string]string{"feature.txt": "work\n"})
	id, err := w.Repo().CommitAll(t.Context(), CommitOptions{Message: "feature\n", Author: testSig})
	must(t, err)
	must(t, w.Release(t.Context()))
	if got := sh(t, f.r.Dir(), nil, "rev-parse", "refs/heads/feature"); got != id {
		t.Fatalf("branch feature = %s after release, want the attempt's commit %s", got, id)
	}
	if _, err := p.Acquire(t.Context(), Checkout{Base: f.c2, Branch: "feature"}); !errors.Is(err, ErrExists) {
		t.Fatalf("Acquire on an existing branch: %v, want ErrExists", err)
	}
	if got := sh(t, f.r.Dir(), nil, "rev-parse", "refs/heads/feature"); got != id {
		t.Fatalf("a refused acquisition moved the branch to %s", got)
	}
	must(t, f.r.DeleteBranch(t.Context(), "feature")) // not checked out anywhere now
	if st := p.Stats(); st.Idle != 1 {
		t.Fatalf("stats %+v: the refused acquisition lost the idle worktree", st)
	}
	w = acquire(t, p, Checkout{Base: f.c2, Branch: "feature"})
	assertIdentical(t, f.r, w, Checkout{Base: f.c2, Branch: "feature"})
	must(t, w.Release(t.Context()))
	if err := w.Release(t.Context()); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("second Release: %v, want ErrBadArgument", err)
	}
}

// TestWorktreePoolBadInput: bad checkouts are typed errors and change
// nothing.
func TestWorktreePoolBadInput(t *testing.T) {
	t.Parallel()
	f := newPoolFixture(t)
	p := newTestPool(t, f.r, PoolOptions{})
	for _, tc := range []struct {
		co   Checkout
		want error
	}{
		{Checkout{Base: "-x"}, ErrBadArgument},
		{Checkout{Base: ""}, ErrBadArgument},
		{Checkout{Base: strings.Repeat("ab", 20)}, ErrNotFound},
		{Checkout{Base: "no-such-branch"}, ErrNotFound},
		{Checkout{Base: f.c1 + "^{tree}"}, ErrNotFound},
		{Checkout{Base: f.c1, Branch: "HEAD"}, ErrBadArgument},
		{Checkout{Base: f.c1, Branch: "-b"}, ErrBadArgument},
		{Checkout{Base: f.c1, Branch: "a..b"}, ErrBadArgument},
		{Checkout{Base: f.c1, Sparse: []string{"app/*"}}, ErrBadArgument},
		{Checkout{Base: f.c1, Sparse: []string{"../up"}}, ErrBadArgument},
	} {
		if _, err := p.Acquire(t.Context(), tc.co); !errors.Is(err, tc.want) {
			t.Errorf("Acquire(%+v) = %v, want %v", tc.co, err, tc.want)
		}
	}
	// The pool still works, and made nothing but one worktree for the
	// branch git refused.
	w := acquire(t, p, Checkout{Base: f.c2})
	assertIdentical(t, f.r, w, Checkout{Base: f.c2})
	must(t, w.Release(t.Context()))
	if out := sh(t, f.r.Dir(), nil, "branch", "--list", "a*"); out != "" {
		t.Errorf("branches left: %q", out)
	}
}

// TestWorktreePoolEviction: Size bounds the idle worktrees, MaxIdle ages
// them out, Close removes the rest, and only the pool's worktrees go.
func TestWorktreePoolEviction(t *testing.T) {
	t.Parallel()
	f := newPoolFixture(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p := newTestPool(t, f.r, PoolOptions{Size: 2, MaxIdle: time.Minute, Now: clock})
	var ws []*PooledWorktree
	for range 3 {
		ws = append(ws, acquire(t, p, Checkout{Base: f.c1}))
	}
	paths := []string{ws[0].Path(), ws[1].Path(), ws[2].Path()}
	for _, w := range ws {
		must(t, w.Release(t.Context()))
	}
	if st := p.Stats(); st.Idle != 2 || st.Evicted != 1 || st.InUse != 0 {
		t.Fatalf("stats %+v, want 2 idle and 1 evicted", st)
	}
	if _, err := os.Stat(paths[0]); !os.IsNotExist(err) {
		t.Fatalf("least recently used worktree %s still there: %v", paths[0], err)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	p.Trim(t.Context())
	if st := p.Stats(); st.Idle != 0 || st.Evicted != 3 {
		t.Fatalf("stats %+v after MaxIdle, want none idle", st)
	}
	held := acquire(t, p, Checkout{Base: f.c2})
	must(t, p.Close(t.Context()))
	must(t, held.Release(t.Context()))
	wts, err := f.r.Worktrees(t.Context())
	must(t, err)
	if len(wts) != 1 {
		t.Fatalf("worktrees after Close: %+v, want only the main one", wts)
	}
}

// TestWorktreePoolBusy: one pool per directory.
func TestWorktreePoolBusy(t *testing.T) {
	t.Parallel()
	f := newPoolFixture(t)
	dir := filepath.Join(t.TempDir(), "pool")
	newTestPool(t, f.r, PoolOptions{Dir: dir})
	if _, err := NewWorktreePool(t.Context(), f.r, PoolOptions{Dir: dir}); !errors.Is(err, ErrPoolBusy) {
		t.Fatalf("second pool: %v, want ErrPoolBusy", err)
	}
	if _, err := NewWorktreePool(t.Context(), f.r, PoolOptions{}); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("pool without a directory: %v, want ErrBadArgument", err)
	}
}

// TestWorktreePoolUnpooled: where git might convert content, the pool
// leaves the checkout to git (and removes the worktree on release).
func TestWorktreePoolUnpooled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{
		{"eol=crlf", map[string]string{".gitattributes": "*.txt eol=crlf\n", "a.txt": "line\n"}},
		{"ident", map[string]string{"sub/.gitattributes": "*.c ident\n", "sub/x.c": "/* $Id$ */\n"}},
		{"macro with a filter", map[string]string{".gitattributes": "[attr]lfs filter=lfs diff=lfs\n*.bin lfs\n", "a.bin": "x\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, tc.files)
			base := sh(t, r.Dir(), nil, "rev-parse", "HEAD")
			p := newTestPool(t, r, PoolOptions{})
			w := acquire(t, p, Checkout{Base: base, Branch: "b"})
			assertIdentical(t, r, w, Checkout{Base: base, Branch: "b"})
			if st := p.Stats(); st.Unpooled != 1 || st.Reason == "" {
				t.Fatalf("stats %+v, want one unpooled acquisition with a reason", st)
			}
			path := w.Path()
			must(t, w.Release(t.Context()))
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("unpooled worktree %s survived its release", path)
			}
		})
	}
	// Harmless attributes keep the pool.
	r := newRepo(t, map[string]string{".gitattributes": "*.go diff=golang\n* text=auto\n*.png binary\n", "a.go": "package a\n"})
	base := sh(t, r.Dir(), nil, "rev-parse", "HEAD")
	p := newTestPool(t, r, PoolOptions{})
	w := acquire(t, p, Checkout{Base: base})
	assertIdentical(t, r, w, Checkout{Base: base})
	if st := p.Stats(); st.Unpooled != 0 {
		t.Fatalf("stats %+v: harmless attributes made the checkout unpooled", st)
	}
	must(t, w.Release(t.Context()))
	// A configuration change is noticed.
	sh(t, r.Dir(), nil, "config", "core.autocrlf", "true")
	w = acquire(t, p, Checkout{Base: base})
	assertIdentical(t, r, w, Checkout{Base: base})
	if st := p.Stats(); st.Unpooled != 1 || !strings.Contains(st.Reason, "autocrlf") {
		t.Fatalf("stats %+v: core.autocrlf=true went unnoticed", st)
	}
	must(t, w.Release(t.Context()))
}

// TestWorktreePoolConcurrent acquires and releases from many goroutines
// (run it with -race).
func TestWorktreePoolConcurrent(t *testing.T) {
	t.Parallel()
	f := newPoolFixture(t)
	p := newTestPool(t, f.r, PoolOptions{Size: 3})
	commits := []string{f.c1, f.c2, f.c3}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 4 {
		wg.Go(func() {
			for i := range 4 {
				c := commits[(g+i)%3]
				w, err := p.Acquire(t.Context(), Checkout{Base: c})
				if err != nil {
					errs <- err
					return
				}
				head, err := w.Repo().RevParse(t.Context(), "HEAD")
				if err == nil && head != c {
					err = errors.New("HEAD " + head + ", want " + c)
				}
				if err == nil {
					var st []StatusEntry
					if st, err = w.Repo().Status(t.Context()); err == nil && len(st) != 0 {
						err = errors.New("not clean")
					}
				}
				writeFiles(t, w.Path(), map[string]string{"scratch.txt": "x"})
				if rerr := w.Release(t.Context()); err == nil {
					err = rerr
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := p.Stats(); st.InUse != 0 || st.Idle > 3 || st.Broken != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestWorktreePoolSameTick: a file changed within the clock tick of its
// checkout keeps its lstat (timestamps are coarse: the kernel's tick); the
// release must find the change by content. The test makes the pool's record
// match the changed file, as a change in the same tick would.
func TestWorktreePoolSameTick(t *testing.T) {
	t.Parallel()
	f := newPoolFixture(t)
	p := newTestPool(t, f.r, PoolOptions{})
	for _, rel := range []string{"src/a.go", "link-to-readme"} {
		w := acquire(t, p, Checkout{Base: f.c1})
		abs := filepath.Join(w.Path(), rel)
		if rel == "link-to-readme" {
			must(t, os.Remove(abs))
			must(t, os.Symlink("README.mX", abs)) // same length
		} else {
			rewriteSameStat(t, abs)
		}
		fi, err := os.Lstat(abs)
		must(t, err)
		st := w.s.st
		for i := range st.entries {
			if st.entries[i].path == rel {
				st.entries[i].st, _ = statOf(fi)
			}
		}
		st.mark = changeTimeOf(fi)
		must(t, w.Release(t.Context()))
		w = acquire(t, p, Checkout{Base: f.c1})
		assertIdentical(t, f.r, w, Checkout{Base: f.c1})
		must(t, w.Release(t.Context()))
	}
}

// TestWorktreePoolKilled kills a process using a pool (kill -9) at random
// moments of its acquire, change, release loop; the next pool on the same
// directory must remove what it left and hand out correct worktrees.
func TestWorktreePoolKilled(t *testing.T) {
	t.Parallel()
	f := newPoolFixture(t)
	dir := filepath.Join(t.TempDir(), "pool")
	rng := rand.New(rand.NewPCG(5, 21))
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWorktreePoolHelper$")
		cmd.Env = append(os.Environ(), "APIARY_POOL_HELPER="+strings.Join([]string{f.r.Dir(), dir, f.c1, f.c2}, "\n"), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.StdoutPipe()
		must(t, err)
		must(t, cmd.Start())
		buf := make([]byte, 6)
		if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("helper did not start: %q %v", buf, err)
		}
		time.Sleep(time.Duration(20+rng.IntN(300)) * time.Millisecond)
		must(t, cmd.Process.Kill())
		_ = cmd.Wait()

		p, err := NewWorktreePool(t.Context(), f.r, PoolOptions{Dir: dir})
		if err != nil {
			t.Fatalf("round %d: reopening the pool: %v", round, err)
		}
		ents, err := os.ReadDir(dir)
		must(t, err)
		if len(ents) != 1 {
			t.Fatalf("round %d: the reopened pool kept %d entries in its directory", round, len(ents))
		}
		co := Checkout{Base: f.c2, Branch: "after-kill-" + string(rune('a'+round))}
		w := acquire(t, p, co)
		assertIdentical(t, f.r, w, co)
		must(t, w.Release(t.Context()))
		must(t, p.Close(t.Context()))
		wts, err := f.r.Worktrees(t.Context())
		must(t, err)
		for _, wt := range wts {
			if strings.HasPrefix(wt.Path, dir) {
				t.Fatalf("round %d: worktree %s left registered", round, wt.Path)
			}
		}
	}
}

// TestWorktreePoolHelper is the process TestWorktreePoolKilled kills.
func TestWorktreePoolHelper(t *testing.T) {
	spec := os.Getenv("APIARY_POOL_HELPER")
	if spec == "" {
		t.Skip("run by TestWorktreePoolKilled")
	}
	a := strings.Split(spec, "\n")
	r := New(a[0], Options{})
	ctx := context.Background()
	p, err := NewWorktreePool(ctx, r, PoolOptions{Dir: a[1], Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("ready\n")
	for i := 0; ; i++ {
		w, err := p.Acquire(ctx, Checkout{Base: a[2+i%2], Branch: fmt.Sprintf("killed-%d-%d", os.Getpid(), i)})
		if err != nil {
			t.Fatal(err)
		}
		writeFiles(t, w.Path(), map[string]string{"new.txt": "x", "README.md": "changed\n"})
		if err := w.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWorktreePoolBare: the pool works on a bare repository (a worker's
// clone of the shared remote is one).
func TestWorktreePoolBare(t *testing.T) {
	t.Parallel()
	f := newPoolFixture(t)
	dir := filepath.Join(t.TempDir(), "repo.git")
	sh(t, f.r.Dir(), nil, "clone", "--quiet", "--bare", f.r.Dir(), dir)
	r := New(dir, Options{Env: append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")})
	p := newTestPool(t, r, PoolOptions{})
	for _, co := range []Checkout{{Base: f.c1, Branch: "bare-1"}, {Base: f.c3, Sparse: []string{"app"}}, {Base: f.c2, Branch: "bare-2"}} {
		w := acquire(t, p, co)
		assertIdentical(t, r, w, co)
		mess(t, w.Path(), nil)
		must(t, w.Release(t.Context()))
	}
	if st := p.Stats(); st.Created != 1 || st.Reused != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestWorktreePoolPath acquires worktrees at a caller's path: git lists
// them there (and nowhere else) while acquired, the release takes them
// back, and a caller that removed or occupied the path gets a typed error
// or an eviction, never a worktree git cannot account for.
func TestWorktreePoolPath(t *testing.T) {
	t.Parallel()
	f := newPoolFixture(t)
	p := newTestPool(t, f.r, PoolOptions{Size: 2})
	listed := func() string { return sh(t, f.r.Dir(), nil, "worktree", "list", "--porcelain") }
	for i, co := range []Checkout{{Base: f.c1, Branch: "p-1"}, {Base: f.c2}, {Base: f.c3, Branch: "p-2", Sparse: []string{"lib"}}} {
		co.Path = filepath.Join(t.TempDir(), "attempt", "wt")
		w := acquire(t, p, co)
		if w.Path() != co.Path || (i > 0) != w.Reused() {
			t.Fatalf("step %d: at %s (reused %v), want %s", i, w.Path(), w.Reused(), co.Path)
		}
		if l := listed(); !strings.Contains(l, "worktree "+co.Path+"\n") || strings.Contains(l, "prunable") {
			t.Fatalf("step %d: git worktree list:\n%s", i, l)
		}
		assertIdentical(t, f.r, w, co)
		mess(t, w.Path(), nil)
		must(t, w.Release(t.Context()))
		if _, err := os.Lstat(co.Path); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("step %d: %s still there after release: %v", i, co.Path, err)
		}
		if l := listed(); strings.Contains(l, co.Path) || strings.Contains(l, "prunable") {
			t.Fatalf("step %d: git worktree list after release:\n%s", i, l)
		}
	}

	taken := filepath.Join(t.TempDir(), "taken")
	must(t, os.Mkdir(taken, 0o755))
	if _, err := p.Acquire(t.Context(), Checkout{Base: f.c1, Path: taken}); !errors.Is(err, ErrExists) {
		t.Fatalf("Acquire at an existing directory: %v, want ErrExists", err)
	}

	// The caller removed the worktree it was given: the release evicts it.
	gone := filepath.Join(t.TempDir(), "gone")
	w := acquire(t, p, Checkout{Base: f.c1, Path: gone})
	must(t, os.RemoveAll(gone))
	before := p.Stats()
	must(t, w.Release(t.Context()))
	if st := p.Stats(); st.Broken != before.Broken+1 || st.Idle != before.Idle {
		t.Fatalf("stats after releasing a removed worktree: %+v (before %+v)", st, before)
	}
	if l := listed(); strings.Contains(l, gone) || strings.Contains(l, "prunable") {
		t.Fatalf("git worktree list after releasing a removed worktree:\n%s", l)
	}
	w = acquire(t, p, Checkout{Base: f.c2, Path: gone})
	assertIdentical(t, f.r, w, Checkout{Base: f.c2})
	must(t, w.Release(t.Context()))
}

// TestWorktreePoolLockedLeftover: a pool killed inside `git worktree add`
// leaves a locked worktree record with no directory; the next pool on the
// directory clears it and can make that worktree again.
func TestWorktreePoolLockedLeftover(t *testing.T) {
	t.Parallel()
	f := newPoolFixture(t)
	dir := filepath.Join(t.TempDir(), "pool")
	left := filepath.Join(dir, "wt0")
	sh(t, f.r.Dir(), nil, "worktree", "add", "--quiet", "--detach", left, f.c1)
	sh(t, f.r.Dir(), nil, "worktree", "lock", "--reason", "initializing", left)
	must(t, os.RemoveAll(left))
	p := newTestPool(t, f.r, PoolOptions{Dir: dir})
	w := acquire(t, p, Checkout{Base: f.c2})
	if w.Path() != left {
		t.Fatalf("acquired %s, want the leftover's path %s", w.Path(), left)
	}
	assertIdentical(t, f.r, w, Checkout{Base: f.c2})
	must(t, w.Release(t.Context()))
	must(t, p.Close(t.Context()))
	if l := sh(t, f.r.Dir(), nil, "worktree", "list", "--porcelain"); strings.Contains(l, dir) {
		t.Fatalf("worktrees left in the pool's directory:\n%s", l)
	}
}
