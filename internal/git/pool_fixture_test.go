package git

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// poolFixture is a repository whose commits exercise what a checkout must
// get right: modes, symbolic links (to files, to directories, dangling),
// names with spaces and non-ASCII letters, an empty file, ignore rules, a
// file that becomes a directory and one that goes the other way, files that
// change mode or kind, whole directories appearing and vanishing.
type poolFixture struct {
	r          *Repo
	c1, c2, c3 string
}

func newPoolFixture(t *testing.T) *poolFixture {
	t.Helper()
	r := newRepo(t, nil)
	dir := r.Dir()
	f := &poolFixture{r: r}
	f.c1 = commitTree(t, dir, "c1", func() {
		writeFiles(t, dir, map[string]string{
			"README.md":                     "hello\n",
			"bin/run.sh":                    "#!/bin/sh\necho run\n",
			"src/a.go":                      "package src\n\nconst A = 1\n",
			"src/b.go":                      "package src\n\nconst B = 2\n",
			"src/sub/c.go":                  "package sub\n",
			"src/sub/deep/d.go":             "package deep\n",
			"docs/guide.md":                 "# Guide\n",
			"space dir/file with space.txt": "spaces\n",
			"ünï/cödé.txt":                  "unicode\n",
			"empty.txt":                     "",
			".gitignore":                    "*.log\nbuild/\n",
			"df/x":                          "x in df\n",
			"fd":                            "fd is a file\n",
			"app/top.txt":                   "top\n",
			"app/one/f1.txt":                "one\n",
			"app/one/deeper/f1b.txt":        "one deeper\n",
			"app/two/f2.txt":                "two\n",
			"lib/l1.txt":                    "lib\n",
		})
		must(t, os.Chmod(filepath.Join(dir, "bin/run.sh"), 0o755))
		must(t, os.Symlink("README.md", filepath.Join(dir, "link-to-readme")))
		must(t, os.Symlink("src", filepath.Join(dir, "link-dir")))
		must(t, os.Symlink("nowhere/at/all", filepath.Join(dir, "dangling")))
	})
	f.c2 = commitTree(t, dir, "c2", func() {
		must(t, os.RemoveAll(filepath.Join(dir, "df")))
		must(t, os.Remove(filepath.Join(dir, "fd")))
		writeFiles(t, dir, map[string]string{
			"README.md":        "hello, again\n",
			"src/a.go":         "package src\n\nconst A = 10\n",
			"src/new.go":       "package src\n\nconst N = 3\n",
			"df":               "df is a file now\n",
			"fd/y":             "fd is a directory now\n",
			"new dir/z.txt":    "z\n",
			"app/two/f2.txt":   "two, changed\n",
			"app/three/f3.txt": "three\n",
		})
		must(t, os.Remove(filepath.Join(dir, "src/b.go")))
		must(t, os.RemoveAll(filepath.Join(dir, "src/sub/deep")))
		must(t, os.Chmod(filepath.Join(dir, "docs/guide.md"), 0o755))
		must(t, os.Remove(filepath.Join(dir, "link-to-readme")))
		must(t, os.Symlink("docs/guide.md", filepath.Join(dir, "link-to-readme")))
		must(t, os.Remove(filepath.Join(dir, "bin/run.sh")))
		must(t, os.Symlink("../src/a.go", filepath.Join(dir, "bin/run.sh")))
	})
	f.c3 = commitTree(t, dir, "c3", func() {
		writeFiles(t, dir, map[string]string{
			"app/one/f1.txt": "one, changed\n",
			"lib/l2.txt":     "lib two\n",
		})
		must(t, os.RemoveAll(filepath.Join(dir, "app/two")))
	})
	return f
}

// commitTree changes the main worktree and commits everything on main.
func commitTree(t *testing.T, dir, msg string, change func()) string {
	t.Helper()
	change()
	sh(t, dir, nil, "add", "-A")
	sh(t, dir, nil, "commit", "--quiet", "-m", msg)
	return sh(t, dir, nil, "rev-parse", "HEAD")
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mess does to a worktree what a careless task attempt might: every kind of
// change the pool must undo; rng, when set, picks a random subset in a
// random order.
func mess(t *testing.T, dir string, rng *rand.Rand) {
	t.Helper()
	outside := t.TempDir()
	admin := strings.TrimPrefix(strings.TrimSpace(readFile(t, filepath.Join(dir, ".git"))), "gitdir: ")
	ops := []func(){
		// Same size, same mtime, within the clock tick of the checkout.
		func() { rewriteSameStat(t, filepath.Join(dir, "src/a.go")) },
		func() { _ = os.Chmod(filepath.Join(dir, "README.md"), 0o600) },
		func() { _ = os.Chmod(filepath.Join(dir, "empty.txt"), 0o755) },
		func() { _ = os.Remove(filepath.Join(dir, "docs/guide.md")) },
		func() { _ = os.RemoveAll(filepath.Join(dir, "src/sub")) },
		func() {
			p := filepath.Join(dir, "empty.txt")
			if os.Remove(p) == nil {
				writeFiles(t, dir, map[string]string{"empty.txt/inner": "was a file\n"})
			}
		},
		func() {
			p := filepath.Join(dir, "app/one")
			if os.RemoveAll(p) == nil {
				writeFiles(t, outside, map[string]string{"precious.txt": "must survive\n"})
				_ = os.Symlink(outside, p)
			}
		},
		func() {
			writeFiles(t, dir, map[string]string{"new.txt": "untracked\n", "u/v/w.txt": "untracked deep\n", "x.log": "ignored\n", "build/out.o": "ignored dir\n", ".apiary/envelope.json": "{}\n"})
		},
		func() {
			nested := filepath.Join(dir, "nested")
			must(t, os.MkdirAll(nested, 0o755))
			sh(t, nested, nil, "init", "--quiet")
			writeFiles(t, nested, map[string]string{"n.txt": "nested\n"})
			sh(t, nested, nil, "add", "-A")
			sh(t, nested, nil, "commit", "--quiet", "-m", "nested")
		},
		func() { _ = os.MkdirAll(filepath.Join(dir, "emptydir/inner"), 0o755) },
		func() {
			writeFiles(t, dir, map[string]string{"ro/f": "read only\n"})
			_ = os.Chmod(filepath.Join(dir, "ro/f"), 0o400)
			_ = os.Chmod(filepath.Join(dir, "ro"), 0o500)
		},
		func() { _ = os.Chmod(filepath.Join(dir, "src"), 0o700) },
		func() {
			p := filepath.Join(dir, "link-to-readme")
			if os.Remove(p) == nil {
				_ = os.Symlink("somewhere/else", p)
			}
		},
		func() { _ = os.Link(filepath.Join(dir, "README.md"), filepath.Join(outside, "hardlink")) },
		func() { _ = os.Chmod(filepath.Join(dir, ".git"), 0o600) },
		func() {
			writeFiles(t, admin, map[string]string{"MERGE_HEAD": strings.Repeat("0", 40) + "\n", "rebase-merge/head-name": "refs/heads/x\n", "BISECT_LOG": "x\n", "refs/worktree/mine": strings.Repeat("1", 40) + "\n"})
		},
		func() { shTry(dir, "worktree", "lock", "--reason", "mine", dir) },
		func() {
			writeFiles(t, dir, map[string]string{"committed.txt": "committed by the attempt\n"})
			shTry(dir, "add", "-A", "--", "committed.txt")
			shTry(dir, "commit", "--quiet", "--no-verify", "-m", "attempt")
		},
		func() {
			writeFiles(t, dir, map[string]string{"staged.txt": "staged only\n"})
			shTry(dir, "add", "--", "staged.txt")
		},
		func() { writeFiles(t, admin, map[string]string{"index": "garbage"}) },
		func() { writeFiles(t, dir, map[string]string{"lib/outside-cone.txt": "written outside the cone\n"}) },
		func() {
			// A tracked file outside a sparse cone, written anyway.
			if _, err := os.Lstat(filepath.Join(dir, "lib/l1.txt")); os.IsNotExist(err) {
				writeFiles(t, dir, map[string]string{"lib/l1.txt": "lib\n"})
			}
		},
	}
	if rng != nil {
		rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
		ops = ops[:1+rng.IntN(len(ops))]
	}
	for _, op := range ops {
		op()
	}
}

// rewriteSameStat changes a file's content keeping its size and mtime.
func rewriteSameStat(t *testing.T, p string) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return
	}
	b, err := os.ReadFile(p)
	must(t, err)
	b[0] ^= 0x20
	must(t, os.WriteFile(p, b, fi.Mode().Perm()))
	must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snapshot describes every entry of a worktree but its .git file: kind,
// permissions, and content or link target.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ".git" {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + target
		case fi.IsDir():
			out[rel] = fmt.Sprintf("dir %o", fi.Mode().Perm())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			out[rel] = fmt.Sprintf("file %o %s", fi.Mode().Perm(), hex.EncodeToString(h[:8]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gitView is what git reports of a worktree.
type gitView struct {
	files     string // ls-files --stage with skip-worktree tags
	head      string // the commit HEAD resolves to
	symbolic  string // the branch HEAD is on, "" when detached
	sparse    string // sparse-checkout list
	tree      string // write-tree: the index as a tree
	diffFiles int    // exit code of diff-files --quiet (no index refresh)
	status    string // status with untracked and ignored files
	locked    bool
}

func viewOf(t *testing.T, dir string) gitView {
	t.Helper()
	var v gitView
	// diff-files first: it trusts the index's stat data as written.
	v.diffFiles = exitCode(t, dir, "diff-files", "--quiet")
	v.files = sh(t, dir, nil, "ls-files", "--stage", "-t", "-z")
	v.head = sh(t, dir, nil, "rev-parse", "HEAD")
	if exitCode(t, dir, "symbolic-ref", "-q", "HEAD") == 0 {
		v.symbolic = sh(t, dir, nil, "symbolic-ref", "HEAD")
	}
	if exitCode(t, dir, "config", "--get", "core.sparseCheckout") == 0 {
		v.sparse = sh(t, dir, nil, "sparse-checkout", "list")
	}
	v.tree = sh(t, dir, nil, "write-tree")
	v.status = sh(t, dir, nil, "status", "--porcelain=v1", "--ignored=matching", "--untracked-files=all")
	for _, l := range strings.Split(sh(t, dir, nil, "worktree", "list", "--porcelain"), "\n\n") {
		if strings.Contains(l, "worktree "+dir+"\n") && strings.Contains(l, "\nlocked") {
			v.locked = true
		}
	}
	return v
}

func exitCode(t *testing.T, dir string, args ...string) int {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errorsAs(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode()
}

func errorsAs(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

// freshFor makes the reference a pooled worktree must equal: `git worktree
// add` of the same commit (and `git sparse-checkout set --cone`), on a
// branch of its own when the pooled one is on a branch.
func freshFor(t *testing.T, r *Repo, co Checkout) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fresh")
	if co.Branch != "" {
		sh(t, r.Dir(), nil, "worktree", "add", "--quiet", "-b", "fresh-"+co.Branch, dir, co.Base)
	} else {
		sh(t, r.Dir(), nil, "worktree", "add", "--quiet", "--detach", dir, co.Base)
	}
	if len(co.Sparse) > 0 {
		sh(t, dir, nil, append([]string{"sparse-checkout", "set", "--cone"}, co.Sparse...)...)
	}
	t.Cleanup(func() { _ = exec.Command("git", "-C", r.Dir(), "worktree", "remove", "--force", dir).Run() })
	return dir
}

// assertIdentical fails unless the pooled worktree equals a fresh one of the
// same checkout, on disk and to git.
func assertIdentical(t *testing.T, r *Repo, w *PooledWorktree, co Checkout) {
	t.Helper()
	fresh := freshFor(t, r, co)
	want, got := snapshot(t, fresh), snapshot(t, w.Path())
	for _, k := range sortedKeys(want, got) {
		if want[k] != got[k] {
			t.Errorf("%s: fresh %q, pooled %q", k, want[k], got[k])
		}
	}
	fv, pv := viewOf(t, fresh), viewOf(t, w.Path())
	if co.Branch != "" {
		fv.symbolic = "refs/heads/" + co.Branch
	}
	if pv != fv {
		t.Errorf("git's view differs:\nfresh  %+v\npooled %+v", fv, pv)
	}
	if pv.status != "" || pv.diffFiles != 0 {
		t.Errorf("pooled worktree not clean: status %q, diff-files exit %d", pv.status, pv.diffFiles)
	}
	if got := sh(t, w.Path(), nil, "rev-parse", co.Base+"^{tree}"); pv.tree != got {
		t.Errorf("index as a tree = %s, want %s", pv.tree, got)
	}
	link := readFile(t, filepath.Join(w.Path(), ".git"))
	admin := strings.TrimPrefix(strings.TrimSpace(link), "gitdir: ")
	ents, err := os.ReadDir(admin)
	must(t, err)
	for _, e := range ents {
		if !adminKeep[e.Name()] && e.Name() != "ORIG_HEAD" {
			t.Errorf("administrative directory holds %s", e.Name())
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

func sortedKeys(ms ...map[string]string) []string {
	var ks []string
	for _, m := range ms {
		for k := range m {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return slices.Compact(ks)
}

// shTry runs git in dir as a task's agent would, not caring whether it
// works (an earlier change may have broken the index on purpose).
func shTry(dir string, args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@apiary.invalid", "GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@apiary.invalid")
	_ = cmd.Run()
}
