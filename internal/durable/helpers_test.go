package durable_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apiary-dev/apiary/internal/durable"
)

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// fixture is a workspace W beside an outside directory O holding a secret,
// a sibling W_evil, and the reference's symlink plants.
type fixture struct {
	ws, out string
	w       *durable.Workspace
}

// newFixture opens a workspace; cfg.Roots is filled in. Workspaces live on
// tmpfs when available (see workspaceDir).
func newFixture(t testing.TB, cfg durable.Config) *fixture {
	t.Helper()
	parent := tmpParent(t)
	f := &fixture{ws: filepath.Join(parent, "ws"), out: filepath.Join(parent, "outside")}
	must(t, os.Mkdir(f.ws, 0o755))
	must(t, os.Mkdir(f.out, 0o755))
	must(t, os.WriteFile(filepath.Join(f.out, "secret"), []byte("secret\n"), 0o644))
	must(t, os.Mkdir(f.ws+"_evil", 0o755))
	cfg.Roots = append([]string{f.ws}, cfg.Roots...)
	w, err := durable.Open(context.Background(), cfg)
	must(t, err)
	t.Cleanup(func() { w.Close() })
	f.w = w
	return f
}

// tmpParent returns a fresh directory, on tmpfs when /dev/shm exists: the
// confinement and concurrency tests fsync thousands of times and prove
// nothing more on a disk (TestDurableOnDisk covers the disk).
func tmpParent(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if p, err := os.MkdirTemp("/dev/shm", "apiary-durable-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(p) })
			return p
		}
	}
	return t.TempDir()
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) path(rel string) string { return filepath.Join(f.ws, filepath.FromSlash(rel)) }

func (f *fixture) read(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(f.path(rel))
	must(t, err)
	return string(b)
}

// outsideIntact fails if anything but the secret appeared in O or W_evil,
// or the secret changed.
func (f *fixture) outsideIntact(t testing.TB) {
	t.Helper()
	for _, dir := range []string{f.out, f.ws + "_evil"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != "secret" {
				t.Fatalf("%s appeared in %s", e.Name(), dir)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.out, "secret")); string(b) != "secret\n" {
		t.Fatalf("outside secret changed: %q", b)
	}
}

// asErr returns err as a *durable.Error or fails.
func asErr(t testing.TB, err error) *durable.Error {
	t.Helper()
	var e *durable.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *durable.Error, got %v", err)
	}
	return e
}

func reasonOf(e *durable.Error) string { s, _ := e.Context["reason"].(string); return s }

func strp(s string) *string { return &s }
