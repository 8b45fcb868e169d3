package review

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// changeOf commits base, then applies head ("" deletes) as a second commit,
// and checks both out in scratch worktrees: a Change as the review makes.
func changeOf(t *testing.T, base, head map[string]string) *Change {
	t.Helper()
	r := gittest.NewRepo(t, nil)
	b := gittest.Commit(t, r, base, nil)
	h := gittest.Commit(t, r, head, nil)
	dirs := t.TempDir()
	c := &Change{Repo: r, Base: b, Head: h, BaseDir: filepath.Join(dirs, "base"), HeadDir: filepath.Join(dirs, "head"), Scratch: t.TempDir()}
	for dir, rev := range map[string]string{c.BaseDir: b, c.HeadDir: h} {
		if err := r.WorktreeAddDetached(t.Context(), dir, rev); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if c.Changes, err = r.DiffNameStatus(t.Context(), b, h); err != nil {
		t.Fatal(err)
	}
	return c
}

// summary renders findings as "kind severity file:line" lines, sorted.
func summary(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Kind+" "+string(f.Severity)+" "+f.Where())
	}
	slices.Sort(out)
	return out
}

// The fake key is assembled so that this file itself holds no secret.
var fakeKey = "sk-" + "proj-" + strings.Repeat("a1B2c3D4", 6)

func TestSecretScan(t *testing.T) {
	t.Parallel()
	c := changeOf(t,
		map[string]string{"old.go": "package x\n\nconst old = \"" + fakeKey + "\"\n", "README.md": "hello\n"},
		map[string]string{"config.go": "package x\n\n// the key\nconst apiKey = \"" + fakeKey + "\"\n", "README.md": "hello\nwrite to ops@example.com\n", "old.go": "package x\n\nconst old = \"" + fakeKey + "\"\n// edited\n"})
	fs, err := SecretScan{Scanner: newScanner(t)}.Analyse(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	// The key added in config.go is critical; the e-mail address medium;
	// the key already in old.go is not the change's doing.
	want := []string{"secret critical config.go:4", "secret medium README.md:2"}
	if got := summary(fs); !slices.Equal(got, want) {
		t.Fatalf("findings %v, want %v", got, want)
	}
	for _, f := range fs {
		if strings.Contains(f.Evidence, fakeKey) || strings.Contains(f.Evidence, fakeKey[:12]) {
			t.Errorf("evidence leaks the secret: %s", f.Evidence)
		}
	}
	// Without the extra scanner, the built-in detectors still find the
	// key (personal data is the extra scanner's).
	fs, err = SecretScan{}.Analyse(t.Context(), c)
	if got := summary(fs); err != nil || !slices.Equal(got, []string{"secret critical config.go:4"}) {
		t.Errorf("built-in only: %v (%v)", got, err)
	}
}

func TestForbiddenScan(t *testing.T) {
	t.Parallel()
	c := changeOf(t,
		map[string]string{"calc/calc_test.go": calcTest, "golden/out.txt": "x\n"},
		map[string]string{"calc/calc_test.go": gittest.Replace(calcTest, "func TestSub(t *testing.T) {\n\tif Sub(3, 1) != 2 {\n\t\tt.Fatal(\"Sub\")\n\t}\n}\n", ""), "golden/out.txt": "y\n"})
	fs, err := ForbiddenScan{Sealed: []string{"golden/"}}.Analyse(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	got := summary(fs)
	if len(got) < 2 || !slices.Contains(got, "sealed high golden/out.txt") || !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "deleted-tests high calc/calc_test.go:") }) {
		t.Fatalf("findings %v", got)
	}
	if _, err := (ForbiddenScan{Patterns: []string{"nope"}}).Analyse(t.Context(), c); err == nil {
		t.Error("an unknown pattern was accepted")
	}
}

const goMod = "module ex.com/m\n\ngo 1.22\n"

const calcGo = `package calc

// Add adds.
func Add(a, b int) int { return a + b }

// Sub subtracts.
func Sub(a, b int) int { return a - b }

// Sum adds up xs.
func Sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}
`

const calcTest = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Fatalf("Add(1, 2) = %d", Add(1, 2))
	}
}

func TestSub(t *testing.T) {
	if Sub(3, 1) != 2 {
		t.Fatal("Sub")
	}
}

var xs = make([]int, 1000)

func BenchmarkSum(b *testing.B) {
	for b.Loop() {
		Sum(xs)
	}
}
`

func TestGoTest(t *testing.T) {
	t.Parallel()
	envtest.Command(t, "go")
	c := changeOf(t,
		map[string]string{"go.mod": goMod, "calc/calc.go": calcGo, "calc/calc_test.go": calcTest},
		map[string]string{
			"calc/calc.go":      gittest.Replace(calcGo, "return a + b", "return a + b + 1"),
			"calc/calc_test.go": gittest.Replace(calcTest, "func TestSub(t *testing.T) {\n\tif Sub(3, 1) != 2 {\n\t\tt.Fatal(\"Sub\")\n\t}\n}\n", ""),
			"extra/extra.go":    "package extra\n\nfunc F( {\n",
		})
	fs, err := GoTest{}.Analyse(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	got := summary(fs)
	// Each failure is at its place: the failing check, the compile error.
	for _, w := range []string{"test-failure high calc/calc_test.go:7", "build-failure high extra/extra.go:3"} {
		if !slices.Contains(got, w) {
			t.Errorf("missing %q in %v", w, got)
		}
	}
	var total *Finding
	for i := range fs {
		if fs[i].Metric != nil && fs[i].Metric.Name == MetricCoverage {
			total = &fs[i]
		}
	}
	// TestSub is gone, so Sub is no longer covered: coverage drops.
	if total == nil || total.Metric.Delta >= 0 || total.Metric.Base <= total.Metric.Head || total.Severity != SevLow {
		t.Fatalf("coverage finding %+v in %v", total, got)
	}
}

func TestGoBench(t *testing.T) {
	t.Parallel()
	envtest.Command(t, "go")
	slow := gittest.Replace(calcGo, "\tfor _, x := range xs {\n\t\ts += x\n\t}", "\tfor range 30 {\n\t\tfor _, x := range xs {\n\t\t\ts += x\n\t\t}\n\t\ts /= 2\n\t}")
	c := changeOf(t,
		map[string]string{"go.mod": goMod, "calc/calc.go": calcGo, "calc/calc_test.go": calcTest},
		map[string]string{"calc/calc.go": slow})
	fs, err := GoBench{Benchtime: "300x", Count: 5}.Analyse(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	f := fs[0]
	m := f.Metric
	if f.Kind != KindBenchmark || f.Where() != "calc/calc_test.go:19" || m == nil || !m.Significant || m.Delta < 100 || m.Head <= m.Base || *m.P >= 0.05 {
		t.Fatalf("finding %+v metric %+v", f, m)
	}
	t.Logf("%s", f.Evidence)
}

// TestSecretScanUnreadable: a changed file the scan cannot read is a
// finding, never silence; a symbolic link is scanned as its target's name.
func TestSecretScanUnreadable(t *testing.T) {
	t.Parallel()
	c := changeOf(t, map[string]string{"a.txt": "a\n"}, map[string]string{"a.txt": "b\n", "gone.txt": "x\n"})
	if err := os.Chmod(c.HeadDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(c.HeadDir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ghp_"+"Q7vK2mX9pL4wR8tY3nB6cD1fH5jZ0aS2eG4u", filepath.Join(c.HeadDir, "link")); err != nil {
		t.Fatal(err)
	}
	c.Changes = append(c.Changes, git.Change{Status: 'A', Path: "link"})
	fs, err := SecretScan{}.Analyse(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary(fs), []string{"secret critical link:1", "unscanned high gone.txt"}; !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
}
