// Package envtest finds the real components that apiary's tests drive — the
// Claude Code CLI, the MCP Inspector, etcd, git, Chromium — and decides what a
// test does when one is missing: under CI=true it fails, otherwise it skips
// with a hint to run `make deps`. It is imported only from _test.go files.
package envtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// ModuleRoot returns the directory holding go.mod, found by walking up from
// this source file.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("envtest: cannot locate source file")
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("envtest: go.mod not found above " + file)
		}
		dir = parent
	}
}

// InCI reports whether the tests run under CI, where a missing component is a
// failure rather than a skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// missing fails the test under CI and skips it otherwise.
func missing(t testing.TB, what string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s is not installed; `make deps` installs it (CI=true: a missing component fails the test)", what)
	}
	t.Skipf("%s is not installed; run `make deps` (under CI=true this test fails instead)", what)
}

// NodeBin returns the path of an executable installed by test/package.json
// (test/node_modules/.bin/NAME), or fails or skips.
func NodeBin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(ModuleRoot(t), "test", "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		missing(t, "node package providing "+name+" (test/package.json)")
	}
	return p
}

// Claude returns the path of the pinned Claude Code CLI.
func Claude(t testing.TB) string {
	t.Helper()
	return NodeBin(t, "claude")
}

// Command returns the path of an executable on PATH (git, etcd, chromium), or
// fails or skips.
func Command(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(t, name)
	}
	return p
}
